"""The retrieval math memory search and org-fact ranking share (pure: no Django import).

``bm25`` (Okapi BM25 constants and reference formula, which both apps' SQL implements),
``fusion`` (Reciprocal Rank Fusion) and ``vectors`` (the pgvector literal of a query
vector). One copy of each, so the two rankings cannot drift apart.
"""
