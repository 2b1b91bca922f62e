"""Fusion: RRF over both legs (hand-computed), min_relevance, linear ranking."""

import math
from datetime import timedelta

import pytest

from tests.memory.core.selectors.search.helpers import LINEAR, NOW, contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def test_dense_cosine_and_rrf_fusion(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy friday", "deploy database", "lunch menu")
    result = search(rrf_agent, keyword_embedder, "friday deploy", limit=3)
    by_content = {hit.memory.content: hit for hit in result.hits}
    # query (1,1)/√2; d1 (2,1)/√5; d2 (1,0,1)/√2; d3 on the lunch axis
    assert by_content["deploy deploy friday"].dense_score == pytest.approx(3 / math.sqrt(10))
    assert by_content["deploy database"].dense_score == pytest.approx(0.5)
    assert by_content["lunch menu"].dense_score == pytest.approx(0.0, abs=1e-6)
    assert contents(result) == ["deploy deploy friday", "deploy database", "lunch menu"]
    # d1 rank 1 in both lists, d2 rank 2 in both, d3 only dense rank 3
    raw = [2 / 61, 2 / 62, 1 / 63]
    assert [h.combined for h in result.hits] == pytest.approx(
        [(r - raw[2]) / (raw[0] - raw[2]) for r in raw]
    )
    assert [(h.dense_rank, h.sparse_rank) for h in result.hits] == [(1, 1), (2, 2), (3, None)]
    assert result.degraded == [] and result.dense_paths == ["exact", "exact"]


def test_min_relevance_applies_to_the_fused_score(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy friday", "deploy database", "lunch menu")
    result = search(rrf_agent, keyword_embedder, "friday deploy", min_relevance=0.5)
    assert contents(result) == ["deploy deploy friday", "deploy database"]


def test_a_company_without_config_ranks_by_rrf_over_both_legs(keyword_embedder):
    agent = AgentFactory(company=CompanyFactory(config={}))
    store(agent, keyword_embedder, "deploy deploy friday", "deploy database", "lunch menu")
    result = search(agent, keyword_embedder, "friday deploy", limit=3)
    raw = [2 / 11, 2 / 12, 1 / 13]  # rrf_k 10: ranks (1, 1), (2, 2), (3, -)
    assert contents(result) == ["deploy deploy friday", "deploy database", "lunch menu"]
    assert [h.combined for h in result.hits] == pytest.approx(
        [(r - raw[2]) / (raw[0] - raw[2]) for r in raw]
    )


def test_linear_ranking_uses_cosine_boost_and_recency(keyword_embedder):
    # the seeds' linear defaults: 0.7/0.3, decay 0.01, boost 0.1, min 0.3
    agent = AgentFactory(company=CompanyFactory(config=LINEAR))
    store(agent, keyword_embedder, "deploy friday", created_at=NOW - timedelta(hours=10))
    store(agent, keyword_embedder, "deploy database", created_at=NOW - timedelta(hours=100))
    store(agent, keyword_embedder, "lunch menu", created_at=NOW - timedelta(hours=1))
    result = search(agent, keyword_embedder, "deploy", limit=5)
    rel = [1 / math.sqrt(2) + 0.1, 1 / math.sqrt(2) + 0.1, 0.0 + 0.1]
    rec = [math.exp(-0.1), math.exp(-1.0), math.exp(-0.01)]
    combined = [0.7 * r + 0.3 * c for r, c in zip(rel, rec, strict=True)]
    assert contents(result) == ["deploy friday", "deploy database", "lunch menu"]
    assert [h.combined for h in result.hits] == pytest.approx(combined)
    assert [h.relevance for h in result.hits] == pytest.approx(rel)
    assert [h.recency for h in result.hits] == pytest.approx(rec)
    # the company's min_relevance (0.3) kept "lunch menu" (0.367); a query's own threshold wins
    stricter = search(agent, keyword_embedder, "deploy", min_relevance=0.4)
    assert contents(stricter) == ["deploy friday", "deploy database"]
