"""What a search returns: ranked hits with their per-leg ranks and scores."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.core.models.memory import Memory


@dataclass
class SearchHit:
    memory: Memory
    relevance: float
    recency: float
    combined: float
    dense_rank: int | None
    sparse_rank: int | None
    is_shared: bool
    dense_score: float | None = None  # cosine similarity, when the dense leg returned it
    sparse_score: float | None = None  # BM25, when the sparse leg returned it


@dataclass
class SearchResult:
    hits: list[SearchHit]
    degraded: list[str] = field(default_factory=list)
    #: how the dense leg searched each scope part ("exact" / "hnsw" / "hnsw+exact")
    dense_paths: list[str] = field(default_factory=list)
    #: wall-clock of the stages in ms, for diagnostics and benches: embed_ms (the query
    #: embedding, on a worker thread), plan_ms (lexemes and path choice, meanwhile),
    #: embed_wait_ms (the embedding left to wait for after planning), legs_ms (the one
    #: statement running both legs), fuse_ms, hydrate_ms
    timings: dict[str, float] = field(default_factory=dict)
    #: while the company's vectors are being re-embedded for the query's embedder: the
    #: job's progress (``degraded`` then holds ``"reembedding"``)
    reembedding: dict | None = None
    #: the company's query adapter (checkpoint id) that ranked the dense leg, if one did
    adapter: str | None = None
