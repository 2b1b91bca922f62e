"""The dense leg: same-embedder vectors only, the exact and HNSW paths."""

from datetime import timedelta

import pytest

from memory.retrieval.query import MemoryQuery
from memory.selectors.search import dense as dense_module
from memory.selectors.search import memory_search
from tests.memory.factories import MemoryFactory
from tests.memory.selectors.search.helpers import NOW, contents, search, store

pytestmark = pytest.mark.django_db


def test_vectors_of_another_embedder_are_never_compared(rrf_agent, keyword_embedder):
    [mine] = store(rrf_agent, keyword_embedder, "deploy friday")
    MemoryFactory(
        agent=rrf_agent,
        content="lunch menu",
        created_at=NOW - timedelta(hours=1),
        embedding=[1.0] + [0.0] * 383,  # identical to the query's vector, but another model
        embedder_id="some-other-model",
        embedding_status="ready",
    )
    result = search(rrf_agent, keyword_embedder, "deploy", limit=10)
    assert contents(result) == ["deploy friday"]
    assert result.hits[0].memory.pk == mine.pk


def test_hnsw_path_with_exact_fallback(rrf_agent, keyword_embedder, monkeypatch):
    store(rrf_agent, keyword_embedder, "deploy one", "deploy two friday", "lunch three")
    monkeypatch.setattr(dense_module, "EXACT_SCAN_MAX_ROWS", 1)
    deep = memory_search(
        agent=rrf_agent, query=MemoryQuery(text="deploy"), embedder=keyword_embedder, now=NOW,
        include_shared=False, leg_depth=50,
    )  # fmt: skip
    # 3 rows < depth 50: the HNSW walk cannot fill the page, so the exact scan answers.
    assert deep.dense_paths == ["hnsw+exact"]
    shallow = memory_search(
        agent=rrf_agent, query=MemoryQuery(text="deploy", limit=2), embedder=keyword_embedder,
        now=NOW, include_shared=False, leg_depth=2,
    )  # fmt: skip
    assert shallow.dense_paths == ["hnsw"]
    assert [h.dense_rank for h in shallow.hits][:1] == [1]
    assert contents(deep)[:2] == contents(shallow)
