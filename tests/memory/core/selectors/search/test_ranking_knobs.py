"""Each ranking knob of ``memory.retrieval`` is read from the company's config: the same
memories searched for two companies that differ only in that knob rank differently
(hand-computed with the keyword embedder: "deploy" vs "deploy friday" has cosine 1/√2)."""

import math
from datetime import timedelta

import pytest

from tests.memory.core.selectors.search.helpers import NOW, contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db

COSINE = 1 / math.sqrt(2)


def agent_with(**retrieval):
    return AgentFactory(company=CompanyFactory(config={"memory": {"retrieval": retrieval}}))


def linear_agent(**retrieval):
    return agent_with(fusion_strategy="linear", min_relevance=0.0, **retrieval)


def store_two(agent, embedder):
    store(agent, embedder, "deploy friday", created_at=NOW - timedelta(hours=100))
    store(agent, embedder, "lunch menu", created_at=NOW - timedelta(hours=1))


def test_linear_weights_change_the_order(keyword_embedder):
    relevance_first = linear_agent(personal_boost=0.0)
    recency_first = linear_agent(personal_boost=0.0, relevance_weight=0.1, recency_weight=0.9)
    for agent in (relevance_first, recency_first):
        store_two(agent, keyword_embedder)
    rec = [math.exp(-1.0), math.exp(-0.01)]
    first = search(relevance_first, keyword_embedder, "deploy", limit=5)
    assert contents(first) == ["deploy friday", "lunch menu"]
    assert [h.combined for h in first.hits] == pytest.approx(
        [0.7 * COSINE + 0.3 * rec[0], 0.3 * rec[1]]
    )
    second = search(recency_first, keyword_embedder, "deploy", limit=5)
    assert contents(second) == ["lunch menu", "deploy friday"]
    assert [h.combined for h in second.hits] == pytest.approx(
        [0.9 * rec[1], 0.1 * COSINE + 0.9 * rec[0]]
    )


@pytest.mark.parametrize("rate", [0.01, 0.5])
def test_recency_decay_rate_is_the_companys(rate, keyword_embedder):
    agent = linear_agent(recency_decay_rate=rate)
    store(agent, keyword_embedder, "deploy friday", created_at=NOW - timedelta(hours=10))
    [hit] = search(agent, keyword_embedder, "deploy", limit=5).hits
    assert hit.recency == pytest.approx(math.exp(-rate * 10))


@pytest.mark.parametrize("boost", [0.0, 0.25])
def test_personal_boost_is_added_to_relevance(boost, keyword_embedder):
    agent = linear_agent(personal_boost=boost)
    store(agent, keyword_embedder, "deploy friday")
    [hit] = search(agent, keyword_embedder, "deploy", limit=5).hits
    assert hit.relevance == pytest.approx(COSINE + boost)


def _three(agent, embedder):
    store(agent, embedder, "deploy deploy friday", "deploy database", "lunch menu")


def _normalised(raw):
    return [(r - raw[-1]) / (raw[0] - raw[-1]) for r in raw]


def test_min_relevance_is_the_companys_default(keyword_embedder):
    everything = agent_with(min_relevance=0.0)
    strict = agent_with(min_relevance=0.9)
    for agent in (everything, strict):
        _three(agent, keyword_embedder)
    # rrf_k 10, ranks (1, 1), (2, 2), (3, -): normalised 1.0, 0.856, 0.0
    assert contents(search(everything, keyword_embedder, "friday deploy", limit=3)) == [
        "deploy deploy friday",
        "deploy database",
        "lunch menu",
    ]
    assert contents(search(strict, keyword_embedder, "friday deploy", limit=3)) == [
        "deploy deploy friday"
    ]


@pytest.mark.parametrize("k", [10, 60])
def test_rrf_k_is_the_companys(k, keyword_embedder):
    agent = agent_with(rrf_k=k)
    _three(agent, keyword_embedder)
    result = search(agent, keyword_embedder, "friday deploy", limit=3)
    raw = [2 / (k + 1), 2 / (k + 2), 1 / (k + 3)]
    assert [h.combined for h in result.hits] == pytest.approx(_normalised(raw))


@pytest.mark.parametrize("default", [0.5, 0.9])
def test_default_relevance_scores_a_row_without_a_vector(default, keyword_embedder):
    # a search without text (browse) has no similarity to score: default_relevance is used
    agent = agent_with(default_relevance=default)
    store(agent, keyword_embedder, "deploy friday", created_at=NOW)
    [hit] = search(agent, keyword_embedder, None, limit=5).hits
    assert (hit.relevance, hit.recency) == (default, 1.0)
    assert hit.combined == pytest.approx(0.7 * default + 0.3)


@pytest.mark.parametrize(("include_shared", "found"), [(True, 2), (False, 1)])
def test_include_shared_is_the_default_of_a_search(include_shared, found, keyword_embedder):
    agent = agent_with(include_shared=include_shared)
    store(agent, keyword_embedder, "deploy friday")
    store(agent, keyword_embedder, "deploy database", shared=True)
    result = search(agent, keyword_embedder, "deploy", limit=5)
    assert sorted(contents(result)) == sorted(["deploy friday", "deploy database"][:found])
    assert [h.is_shared for h in result.hits].count(True) == found - 1
