"""pgvector 0.8 iterative index scans on the dense leg's HNSW path."""

import numpy as np
import pytest
from django.db import connection

from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import dense as search_module
from memory.core.selectors.search import memory_search
from synthorg.embedding import MINILM_EMBEDDER_ID
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db

DIMS = 384
EMBEDDER = MINILM_EMBEDDER_ID  # the embedder whose HNSW index the migrations build


class FixedEmbedder:
    embedder_id = EMBEDDER
    dims = DIMS

    def __init__(self, vector):
        self.vector = vector

    def embed(self, texts):
        return np.stack([self.vector] * len(texts))

    def embed_one(self, text):
        return self.vector


def unit(rng, centre, noise):
    v = centre + rng.normal(0, noise, size=DIMS)
    return (v / np.linalg.norm(v)).astype(np.float32)


@pytest.fixture
def crowded(monkeypatch):
    """Agent ``mine`` holds 40 rows far from the query; 200 rows of ``other`` (same company)
    surround it, so a narrow filtered walk meets mostly rows the filter drops."""
    rng = np.random.default_rng(3)
    near, far = np.zeros(DIMS), np.zeros(DIMS)
    near[0], far[1] = 1.0, 1.0
    company = CompanyFactory(
        config={"memory": {"retrieval": {"fusion_strategy": "rrf", "min_relevance": 0.0}}}
    )
    mine, other = AgentFactory(company=company), AgentFactory(company=company)
    for agent, centre, count in ((other, near, 200), (mine, 0.3 * near + far, 40)):
        Memory.objects.bulk_create(
            [
                MemoryFactory.build(
                    agent=agent,
                    embedding=unit(rng, centre, 0.05),
                    embedder_id=EMBEDDER,
                    embedding_status=Memory.EmbeddingStatus.READY,
                )
                for _ in range(count)
            ]
        )
    # Force the HNSW path with one narrow walk (no widening step) for a 40-row part.
    for name, value in {
        "EXACT_SCAN_MAX_ROWS": 1,
        "HNSW_MIN_SHARE": 0.0,
        "PART_EXACT_MAX_ROWS": 0,
        "NARROW_PART_EXACT_MAX_ROWS": 0,
        "HNSW_EF_SEARCH_FIRST": 10,
        "HNSW_EF_DEPTH_FACTOR": 0,
        "HNSW_EF_SEARCH": 10,
    }.items():
        monkeypatch.setattr(search_module, name, value)
    return mine, FixedEmbedder(unit(rng, near, 0.0))


def dense(agent, embedder, depth):
    return memory_search(
        agent=agent, query=MemoryQuery(text="anything", limit=depth), embedder=embedder,
        include_shared=False, legs=("dense",), leg_depth=depth,
    )  # fmt: skip


def exact_top(agent, vector, k):
    # Ordered by the similarity expression, which the HNSW index cannot serve: a true exact
    # scan whatever plan the table's statistics (left by earlier tests) would favour.
    literal = "[" + ",".join(map(repr, vector.astype(float).tolist())) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memory_memory WHERE agent_id = %s "
            "ORDER BY 1 - (embedding <=> %s::vector) DESC, id LIMIT %s",
            [agent.pk, literal, k],
        )
        return [row[0] for row in cursor.fetchall()]


def test_an_iterative_walk_fills_the_page_where_a_plain_walk_comes_back_short(crowded, monkeypatch):
    mine, embedder = crowded
    monkeypatch.setattr(search_module, "HNSW_ITERATIVE_SCAN", "off")
    plain = dense(mine, embedder, 20)
    # ef_search 10 returns at most 10 rows before the agent filter: short, exact fallback.
    assert plain.dense_paths == ["hnsw+exact"]

    monkeypatch.setattr(search_module, "HNSW_ITERATIVE_SCAN", "strict_order")
    iterative = dense(mine, embedder, 20)
    assert iterative.dense_paths == ["hnsw"]
    ids = [hit.memory.pk for hit in iterative.hits]
    assert len(ids) == 20
    assert {hit.memory.agent_id for hit in iterative.hits} == {mine.pk}
    assert ids == [hit.memory.pk for hit in plain.hits] == exact_top(mine, embedder.vector, 20)
    # The walk's settings do not leak out of its transaction-local scope.
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone() == ("off",)
