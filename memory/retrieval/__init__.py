"""The retrieval pipeline's pure algorithms (no Django import).

``query`` (the search request), ``ranking`` (linear relevance + recency), ``fusion`` (RRF),
``diversity`` (MMR), ``filtering`` (non-inferable, fail-closed), ``packing`` (token budget),
``formatting`` (untrusted-content fencing) and ``bm25`` (the reference math the SQL sparse
leg implements). ``memory.selectors.search`` and ``memory.selectors.context`` wire them to
Postgres.
"""
