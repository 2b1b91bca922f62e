"""Hybrid memory search: a dense leg (pgvector cosine) and a sparse leg (BM25 in SQL), fused.

Scope (:mod:`.scope`)
    ``memory_search`` looks at the agent's live private memories and, when asked, the
    company's live shared knowledge; ``shared_search`` at the company's shared knowledge only.
    Live = not superseded and not expired. Nothing crosses companies.

Dense leg (:mod:`.dense`)
    Cosine similarity between the query embedding and stored vectors of the same embedder,
    exact or through HNSW per scope part.

Sparse leg (:mod:`.sparse`)
    Okapi BM25 computed in one SQL statement over the scope (:mod:`synthorg.retrieval.bm25`).

Fusion (:mod:`.fuse`)
    Per the company's ``memory.retrieval`` config: ``rrf`` or ``linear``. If the query
    cannot be embedded, the sparse leg answers alone and ``degraded`` is ``["dense"]``.

:mod:`.pipeline` wires them (:func:`memory_search`, :func:`shared_search`); a query without
text lists memories newest first (metadata filters only). :mod:`.hydrate` loads the hits.
"""

from memory.core.selectors.search.legs import DEGRADED_DENSE
from memory.core.selectors.search.pipeline import (
    LEG_ONLY_UNKNOWN,
    LEGS,
    memory_search,
    shared_search,
)
from memory.core.selectors.search.results import SearchHit, SearchResult
from memory.core.selectors.search.sparse import common_lexemes, query_lexemes

__all__ = [
    "DEGRADED_DENSE",
    "LEGS",
    "LEG_ONLY_UNKNOWN",
    "SearchHit",
    "SearchResult",
    "common_lexemes",
    "memory_search",
    "query_lexemes",
    "shared_search",
]
