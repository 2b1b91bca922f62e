"""Running the legs: the query embedded once, on a worker thread, while the planning round
trip runs; a cached vector is not embedded again; embedder failures degrade the dense leg."""

import threading

import pytest

from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from synthorg.embedding import query_embedding_cache
from tests.memory.core.retrieval.embedders import KeywordEmbedder
from tests.memory.core.selectors.search.helpers import NOW, contents, store

pytestmark = pytest.mark.django_db


class RecordingEmbedder(KeywordEmbedder):
    def __init__(self):
        super().__init__(["deploy", "friday", "database", "lunch", "python"])
        self.threads: list[str] = []

    def embed(self, texts):
        self.threads.append(threading.current_thread().name)
        return super().embed(texts)


def test_the_query_is_embedded_once_on_a_worker_thread(rrf_agent):
    embedder = RecordingEmbedder()
    store(rrf_agent, embedder, "deploy friday", "lunch menu")
    embedder.threads.clear()
    query = MemoryQuery(text="deploy on friday")
    first = memory_search(agent=rrf_agent, query=query, embedder=embedder, now=NOW)
    assert contents(first)[0] == "deploy friday"
    assert len(embedder.threads) == 1 and embedder.threads[0].startswith("query-embedding")
    assert embedder.threads[0] != threading.current_thread().name

    hits_before = query_embedding_cache.hits
    again = memory_search(agent=rrf_agent, query=query, embedder=embedder, now=NOW)
    assert len(embedder.threads) == 1  # served from the query-embedding cache
    assert query_embedding_cache.hits == hits_before + 1
    assert contents(again) == contents(first) and again.timings["embed_ms"] == 0.0


def test_an_embedder_failure_on_the_worker_degrades_to_sparse(rrf_agent, failing_embedder):
    store(rrf_agent, RecordingEmbedder(), "deploy friday", "lunch menu")
    result = memory_search(
        agent=rrf_agent, query=MemoryQuery(text="deploy"), embedder=failing_embedder, now=NOW
    )
    assert result.degraded == ["dense"] and contents(result) == ["deploy friday"]
    assert result.dense_paths == [] and result.timings["embed_ms"] == 0.0
