"""The retrieval pipeline's pure algorithms (no Django import).

``query`` (the search request), ``ranking`` (linear relevance + recency), ``diversity``
(MMR), ``filtering`` (non-inferable, fail-closed), ``packing`` (token budget) and
``formatting`` (untrusted-content fencing). BM25, RRF and the vector literal, which org
memory uses too, live in :mod:`synthorg.retrieval`. ``memory.core.selectors.search`` and
``memory.prompting.context`` wire them to Postgres.
"""
