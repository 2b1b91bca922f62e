"""The per-process query-embedding cache: bounded LRU, keyed by embedder id and text."""

import numpy as np
import pytest

from synthorg.embedding import EmbeddingError
from synthorg.embedding.query_cache import MAX_CACHED_TEXT_CHARS, QueryEmbeddingCache


class CountingEmbedder:
    """A real (deterministic) embedder that records every text it was asked to embed."""

    dims = 4

    def __init__(self, embedder_id="counting", fail=False):
        self.embedder_id = embedder_id
        self.fail = fail
        self.calls: list[str] = []

    def embed(self, texts):
        self.calls.extend(texts)
        if self.fail:
            raise EmbeddingError("down")
        out = np.array([[len(t), t.count("a"), 1.0, 0.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_one(self, text):
        return self.embed([text])[0]


def test_a_repeated_query_is_embedded_once_and_the_vector_is_read_only():
    cache, embedder = QueryEmbeddingCache(max_entries=8), CountingEmbedder()
    first = cache.embed(embedder, "what is the deploy day?")
    again = cache.embed(embedder, "what is the deploy day?")
    assert embedder.calls == ["what is the deploy day?"]
    np.testing.assert_array_equal(first, embedder.embed_one("what is the deploy day?"))
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    with pytest.raises(ValueError):
        first[0] = 0.0


def test_the_cache_is_bounded_and_evicts_the_least_recently_used():
    cache, embedder = QueryEmbeddingCache(max_entries=3), CountingEmbedder()
    for text in ("a", "b", "c"):
        cache.embed(embedder, text)
    cache.embed(embedder, "a")  # a is now the most recent; b the least
    cache.embed(embedder, "d")
    assert len(cache) == 3
    embedder.calls.clear()
    for text in ("a", "c", "d"):
        cache.embed(embedder, text)
    assert embedder.calls == []
    cache.embed(embedder, "b")
    assert embedder.calls == ["b"] and len(cache) == 3
    for n in range(100):
        cache.embed(embedder, f"query {n}")
    assert len(cache) == 3


def test_embedders_with_different_ids_do_not_share_entries():
    cache = QueryEmbeddingCache(max_entries=8)
    one, other = CountingEmbedder("model-one"), CountingEmbedder("model-two")
    cache.embed(one, "same text")
    cache.embed(other, "same text")
    assert one.calls == ["same text"] and other.calls == ["same text"]


def test_failures_and_long_texts_are_not_cached_and_size_zero_disables_it():
    cache = QueryEmbeddingCache(max_entries=8)
    failing = CountingEmbedder(fail=True)
    for _ in range(2):
        with pytest.raises(EmbeddingError):
            cache.embed(failing, "q")
    assert len(failing.calls) == 2 and len(cache) == 0
    embedder = CountingEmbedder()
    long = "x" * (MAX_CACHED_TEXT_CHARS + 1)
    cache.embed(embedder, long)
    cache.embed(embedder, long)
    assert embedder.calls == [long, long] and len(cache) == 0
    disabled, embedder = QueryEmbeddingCache(max_entries=0), CountingEmbedder()
    disabled.embed(embedder, "q")
    disabled.embed(embedder, "q")
    assert embedder.calls == ["q", "q"] and len(disabled) == 0
    with pytest.raises(ValueError):
        QueryEmbeddingCache(max_entries=-1)


def test_a_lookup_without_embedding_counts_hits_only():
    cache, embedder = QueryEmbeddingCache(max_entries=8), CountingEmbedder()
    assert cache.cached("counting", "deploy day?") is None
    assert (cache.hits, cache.misses) == (0, 0)
    vector = cache.embed(embedder, "deploy day?")
    assert cache.cached("counting", "deploy day?") is vector
    assert cache.cached("other-model", "deploy day?") is None
    assert (cache.hits, cache.misses, embedder.calls) == (1, 1, ["deploy day?"])
