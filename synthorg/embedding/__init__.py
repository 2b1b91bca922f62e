"""Text embedders: the :class:`Embedder` protocol and its two implementations.

Pure package (no Django imports). :func:`default_embedder` is the process-wide local model;
:class:`OpenAICompatibleEmbedder` is the remote alternative. Every stored vector carries the
``embedder_id`` of the embedder that produced it.
"""

from __future__ import annotations

import functools
import threading

from synthorg.embedding.base import Embedder, EmbeddingError
from synthorg.embedding.minilm_onnx import MINILM_DIMS, MINILM_EMBEDDER_ID, MiniLMOnnxEmbedder
from synthorg.embedding.openai_http import OpenAICompatibleEmbedder
from synthorg.embedding.query_cache import QueryEmbeddingCache, embed_query, query_embedding_cache

__all__ = [
    "MINILM_DIMS",
    "MINILM_EMBEDDER_ID",
    "Embedder",
    "EmbeddingError",
    "MiniLMOnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "QueryEmbeddingCache",
    "default_embedder",
    "embed_query",
    "query_embedding_cache",
]

_default_lock = threading.Lock()


def default_embedder() -> MiniLMOnnxEmbedder:
    """The process-wide :class:`MiniLMOnnxEmbedder`, created on first call.

    Creating it loads nothing; the model loads on its first ``embed`` or ``warm_up``. Every
    caller in the process shares the one instance, so the model is loaded once.
    """
    # functools.cache alone lets two threads racing on the first call each build (and later
    # load) their own instance; the lock makes the first call single-flight.
    with _default_lock:
        return _create_default_embedder()


@functools.cache
def _create_default_embedder() -> MiniLMOnnxEmbedder:
    return MiniLMOnnxEmbedder()
