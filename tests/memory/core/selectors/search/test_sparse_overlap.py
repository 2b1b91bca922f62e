"""The sparse leg run while the query is still being embedded (issue 35).

The embedders below hold the query's embedding until the sparse leg's own statement has run
(a Django execute wrapper opens the gate), so the overlap happens in every run; a second
search of the same text finds its vector in the query-embedding cache and runs the one
search statement, without the overlap. Both must answer the same.
"""

import threading

import pytest
from django.db import connection

from synthorg.embedding import EmbeddingError, query_embedding_cache
from tests.memory.core.retrieval.embedders import KeywordEmbedder
from tests.memory.core.selectors.search.helpers import contents, search, store

pytestmark = pytest.mark.django_db

#: The sparse leg's own statement (legs._run_sparse) ends with this.
SPARSE_ALONE = "SELECT id, score FROM sparse ORDER BY score DESC, id"
GATE_TIMEOUT_S = 30  # a bug must fail the test, not hang it


class _Gate:
    """Opens once the sparse leg's own statement has run on the test's connection."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if SPARSE_ALONE in sql:
            self.opened.set()
        return result

    def wait(self) -> None:
        if not self.opened.wait(GATE_TIMEOUT_S):
            raise AssertionError("the sparse leg did not run while the query was embedded")


class GatedKeywordEmbedder(KeywordEmbedder):
    def __init__(self, keywords, gate: _Gate) -> None:
        super().__init__(keywords)
        self.gate = gate

    def embed(self, texts):
        self.gate.wait()
        return super().embed(texts)


class GatedFailingEmbedder:
    embedder_id = "test-failing"
    dims = KeywordEmbedder.dims

    def __init__(self, gate: _Gate) -> None:
        self.gate = gate

    def embed(self, texts):
        self.gate.wait()
        raise EmbeddingError("embedding service unreachable")

    def embed_one(self, text):
        return self.embed([text])[0]


def _hits(result):
    return [
        (
            hit.memory.pk,
            hit.relevance,
            hit.recency,
            hit.combined,
            hit.dense_rank,
            hit.sparse_rank,
            hit.dense_score,
            hit.sparse_score,
            hit.is_shared,
        )
        for hit in result.hits
    ]


@pytest.fixture(autouse=True)
def _cold_query_cache():
    query_embedding_cache.clear()
    yield
    query_embedding_cache.clear()


TEXTS = (
    "deploy deploy friday",
    "deploy the database on friday",
    "lunch menu python",
    "python database deploy",
    "friday lunch",
)


@pytest.mark.parametrize("fields", [{}, {"namespaces": ("ops",)}, {"limit": 2}])
def test_overlapped_sparse_leg_answers_what_the_one_statement_does(
    rrf_agent, keyword_embedder, fields
):
    store(rrf_agent, keyword_embedder, *TEXTS, namespace="ops")
    store(rrf_agent, keyword_embedder, "deploy friday elsewhere", namespace="other")
    gate = _Gate()
    with connection.execute_wrapper(gate):
        overlapped = search(
            rrf_agent, GatedKeywordEmbedder(keyword_embedder.keywords, gate), "deploy friday",
            **fields,
        )  # fmt: skip
    assert "sparse_overlap_ms" in overlapped.timings
    # The same text again: its vector is cached, so one search statement runs both legs.
    single = search(rrf_agent, keyword_embedder, "deploy friday", **fields)
    assert "sparse_overlap_ms" not in single.timings

    assert _hits(overlapped) == _hits(single)
    assert overlapped.hits and all(h.sparse_rank is not None for h in overlapped.hits[:1])
    assert overlapped.degraded == single.degraded == []
    assert overlapped.dense_paths == single.dense_paths


def test_embedder_failure_during_the_overlap_degrades_as_before(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy friday", "lunch menu")
    gate = _Gate()
    with connection.execute_wrapper(gate):
        result = search(rrf_agent, GatedFailingEmbedder(gate), "deploy")
    assert "sparse_overlap_ms" in result.timings
    assert result.degraded == ["dense"]
    assert contents(result) == ["deploy deploy friday"]
    assert result.hits[0].dense_rank is None and result.hits[0].sparse_rank == 1
    # An embedder that fails at once (the search may or may not overlap it): the same hits.

    class Failing(GatedFailingEmbedder):
        def embed(self, texts):
            raise EmbeddingError("embedding service unreachable")

    plain = search(rrf_agent, Failing(gate), "deploy")
    assert plain.degraded == ["dense"]
    assert _hits(plain) == _hits(result)


def test_no_overlap_without_sparse_leg(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, *TEXTS)
    result = search(rrf_agent, keyword_embedder, "deploy friday", legs=("dense",))
    assert "sparse_overlap_ms" not in result.timings
    assert result.hits and all(h.sparse_rank is None for h in result.hits)
