"""Query vectors as pgvector literals (pure)."""

from __future__ import annotations

import functools

import numpy as np


def vector_literal(vector) -> str:
    """``'[x1,x2,...]'`` for ``vector``: every component as 9 significant digits, which
    identify a float32 exactly (pgvector parses them back to the very float32 the embedder
    produced). One ``%`` format per width: faster than ``repr`` per component, and a shorter
    literal for the server to parse (measured:
    docs/benchmarks/latency.md#smaller-levers-in-the-search-path)."""
    values = np.asarray(vector, dtype=np.float64).tolist()
    return _literal_format(len(values)) % tuple(values)


@functools.lru_cache(maxsize=16)
def _literal_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


# --- storage of vectors of any width ---------------------------------------------------------
#
# The embedding columns are untyped ``vector`` (any width per row), so a company may use an
# embedder of any width. An HNSW index needs a fixed width, so each (embedder, width) gets a
# partial expression index over the rows it produced (``memory.core.vector_indexes``), and the
# query casts to the same type so the planner can use it. pgvector's HNSW holds ``vector`` up
# to 2,000 dimensions and ``halfvec`` up to 4,000: wider embedders are indexed (and their
# index walk compared) as half precision; exact scans always compare the stored full-precision
# vectors. Wider than 4,000 cannot be indexed at all and is refused at config load.

HNSW_VECTOR_MAX_DIMS = 2000
HNSW_HALFVEC_MAX_DIMS = 4000


def indexed_type(dims: int) -> str:
    """The SQL type an HNSW index over ``dims``-wide vectors is built on (and queries cast to)."""
    if not 1 <= dims <= HNSW_HALFVEC_MAX_DIMS:
        raise ValueError(f"{dims}-dimensional vectors cannot be indexed (1..4000)")
    kind = "vector" if dims <= HNSW_VECTOR_MAX_DIMS else "halfvec"
    return f"{kind}({int(dims)})"


def cosine_opclass(dims: int) -> str:
    """The HNSW operator class for cosine distance over :func:`indexed_type`."""
    return "vector_cosine_ops" if dims <= HNSW_VECTOR_MAX_DIMS else "halfvec_cosine_ops"
