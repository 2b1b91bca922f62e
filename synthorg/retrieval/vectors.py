"""Query vectors as pgvector literals (pure)."""

from __future__ import annotations

import numpy as np


def vector_literal(vector) -> str:
    """``'[x1,x2,...]'`` for ``vector``: every float32 component exactly (``repr`` of its
    float64 value), so SQL compares against the very vector the embedder produced."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float64).tolist())) + "]"
