"""Dense vectors for org facts, from the default embedder when it is available.

Org facts use the process-wide default embedder (all-MiniLM-L6-v2). If it cannot load or
fails, or ``settings.ORGMEMORY_EMBEDDINGS`` is ``False`` (tests that do not need it), facts
are stored without a vector and retrieval uses BM25 alone: the dense leg is an
improvement, never a requirement.
"""

from __future__ import annotations

import logging

import numpy as np
from django.conf import settings

from orgmemory.models import EMBEDDING_DIMS
from synthorg.embedding import Embedder, EmbeddingError, default_embedder, embed_query

logger = logging.getLogger(__name__)


def org_embedder() -> Embedder | None:
    """The embedder for org facts, or ``None`` when embeddings are switched off."""
    if not getattr(settings, "ORGMEMORY_EMBEDDINGS", True):
        return None
    embedder = default_embedder()
    return embedder if embedder.dims == EMBEDDING_DIMS else None


def embed_text(text: str, *, query: bool = False) -> tuple[str, np.ndarray] | None:
    """``(embedder_id, vector)`` for ``text``, or ``None`` if no embedder is usable.

    ``query`` texts go through the process-wide query cache, which the memory search shares:
    a context request that ranks org facts and memories with the same model embeds its
    query once.
    """
    embedder = org_embedder()
    if embedder is None:
        return None
    try:
        if query:
            return embedder.embedder_id, embed_query(embedder, text)
        return embedder.embedder_id, embedder.embed_one(text)
    except EmbeddingError as exc:
        logger.warning("org-memory embedding unavailable, using BM25 only: %s", exc)
        return None
