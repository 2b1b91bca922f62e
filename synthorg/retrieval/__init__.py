"""The retrieval math memory search and org-fact ranking share (no Django import).

``bm25`` (Okapi BM25 constants, the reference formula and the SQL score expression both
apps' statements use), ``fusion`` (Reciprocal Rank Fusion), ``lexemes`` (a query's english
lexemes and the OR-tsquery over them) and ``vectors`` (the pgvector literal of a query
vector). One copy of each, so the two rankings cannot drift apart.
"""
