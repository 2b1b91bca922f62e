"""Running the legs: embed the query once, then the dense and the sparse leg, timed."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memory.embedding import embedder_for
from memory.selectors.search.dense import dense_leg
from memory.selectors.search.scope import Part
from memory.selectors.search.sparse import sparse_leg
from persistence.models import Company
from synthorg.embedding import Embedder, EmbeddingError, embed_query
from synthorg.errors import DomainError
from synthorg.retrieval.vectors import vector_literal

logger = logging.getLogger(__name__)

DEGRADED_DENSE = "dense"


class _Skipped(Exception):
    pass


@dataclass
class Legs:
    dense: list[tuple]  # (id, similarity) best first
    sparse: list[tuple]  # (id, bm25) best first
    degraded: list[str]
    dense_paths: list[str]
    vector: str | None = None  # the query embedding as a pgvector literal
    embedder_id: str = ""
    dims: int = 0  # the query embedder's width (vectors of another width are never compared)
    timings: dict[str, float] = field(default_factory=dict)


def run_legs(
    *,
    company: Company,
    parts: Sequence[Part],
    filters: Part,
    text: str,
    embedder: Embedder | None,
    depth: int,
    use_dense: bool = True,
    use_sparse: bool = True,
) -> Legs:
    degraded: list[str] = []
    vector: np.ndarray | None = None
    embedder_id = ""
    dims = 0
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    try:
        if not use_dense:
            raise _Skipped
        embedder = embedder or embedder_for(company)
        vector = embed_query(embedder, text)
        embedder_id = embedder.embedder_id
        dims = int(vector.shape[0])
    except (EmbeddingError, DomainError) as exc:
        logger.warning("query embedding failed for company %s: %s", company.pk, exc)
        degraded.append(DEGRADED_DENSE)
    except _Skipped:
        pass

    timings["embed_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    query_literal: str | None = None
    dense: list[tuple] = []
    paths: list[str] = []
    if vector is not None:
        query_literal = vector_literal(vector)
        dense, paths = dense_leg(parts, filters, query_literal, embedder_id, dims, depth)
    timings["dense_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    sparse = sparse_leg(parts, filters, text, depth) if use_sparse else []
    timings["sparse_ms"] = (time.perf_counter() - clock) * 1000
    return Legs(
        timings=timings,
        dense=dense,
        sparse=sparse,
        degraded=degraded,
        dense_paths=paths,
        vector=query_literal,
        embedder_id=embedder_id,
        dims=dims,
    )
