"""A per-process, bounded LRU cache of query embeddings.

Agents ask the same questions again and again (the same task description every step, the
same "what do I know about X"), and one context request looks the query up twice (org facts
and memories). Embedding a query costs a model call (a stage of its own in every search,
measured: docs/benchmarks/latency.md#10k-memories-for-one-agent-by-stage; a network round
trip for a remote embedder); a cache hit costs a dictionary lookup.

Keys are ``(embedder_id, text)``: the id names the model that produced a vector, so two
embedders with the same id give the same vector for the same text (the property every
stored vector relies on too). Cached vectors are read-only arrays so no caller can change
what another one gets. Failures are never cached. Pure module: no Django imports.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from synthorg.embedding.base import Embedder

#: 384-dim float32 vectors: 2,048 entries hold ≈ 3 MiB per process.
DEFAULT_MAX_ENTRIES = 2048
#: Longer texts are embedded but not cached (a pasted document is rarely asked twice, and
#: would crowd out the short questions that are).
MAX_CACHED_TEXT_CHARS = 2000


class QueryEmbeddingCache:
    """LRU of ``(embedder_id, text) → vector`` holding at most ``max_entries`` vectors."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be zero or more, got {max_entries}")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def cached(self, embedder_id: str, text: str) -> np.ndarray | None:
        """The cached vector of ``text`` by ``embedder_id`` (counted as a hit), or ``None``
        (not counted: the :meth:`embed` that follows counts the miss)."""
        key = (embedder_id, text)
        with self._lock:
            vector = self._entries.get(key)
            if vector is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return vector

    def embed(self, embedder: Embedder, text: str) -> np.ndarray:
        """``embedder.embed_one(text)``, from the cache when this text was embedded before.

        Raises whatever the embedder raises (nothing is cached then).
        """
        key = (embedder.embedder_id, text)
        vector = self.cached(*key)
        if vector is not None:
            return vector
        with self._lock:
            self.misses += 1
        # Embed outside the lock: a slow (remote) embedder must not serialise every query.
        vector = np.array(embedder.embed_one(text), dtype=np.float32)
        vector.setflags(write=False)
        if self.max_entries and len(text) <= MAX_CACHED_TEXT_CHARS:
            with self._lock:
                self._entries[key] = vector
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return vector


#: The process-wide cache every search path shares.
query_embedding_cache = QueryEmbeddingCache()


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """The query vector of ``text`` by ``embedder``, through the process-wide cache."""
    return query_embedding_cache.embed(embedder, text)
