"""The time-aware levers end to end through ``memory_search``: the time-window leg
(``time_window_legs``), ``latest_boost`` and ``session_spread``."""

from datetime import UTC, datetime

import pytest

from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.company_config.memory import MemoryRetrievalConfig
from tests.memory.core.selectors.search.helpers import NOW, contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db

# NOW is Sunday 1 March 2026: "last week" is Monday 16 to Monday 23 February
INSIDE = datetime(2026, 2, 18, 9, tzinfo=UTC)
OUTSIDE = datetime(2026, 1, 12, 9, tzinfo=UTC)


def agent_with(company=None, **retrieval):
    company = company or CompanyFactory(config={"memory": {"retrieval": retrieval}})
    return AgentFactory(company=company)


def deployments(agent, embedder):
    """``deploy deploy`` (outside the window) leads both legs; two ``deploy lunch``, one
    inside the window, one outside, tie behind it."""
    store(agent, embedder, "deploy deploy", created_at=datetime(2026, 1, 10, 9, tzinfo=UTC))
    store(agent, embedder, "deploy lunch", created_at=OUTSIDE)
    store(agent, embedder, "deploy lunch", created_at=INSIDE)


def dates(result):
    return [hit.memory.created_at for hit in result.hits]


def test_a_memory_inside_the_anchors_window_is_found_first(keyword_embedder):
    agent = agent_with()  # the product default: time_window_legs on
    deployments(agent, keyword_embedder)
    other = agent_with(company=agent.company)
    store(other, keyword_embedder, "deploy lunch", created_at=INSIDE)

    result = search(agent, keyword_embedder, "what did we deploy last week", limit=10)
    # inside: dense 2–3, sparse 2–3 and window 1 (≥ 2/13 + 1/11) beats dense 1 + sparse 1
    # (2/11); the same text outside the window gains nothing
    assert contents(result) == ["deploy lunch", "deploy deploy", "deploy lunch"]
    assert dates(result)[0] == INSIDE
    assert dates(result)[2] == OUTSIDE
    assert {hit.memory.agent_id for hit in result.hits} == {agent.pk}  # isolation


def test_time_window_legs_off_keeps_the_two_legs_order(keyword_embedder):
    agent = agent_with(time_window_legs=False)
    deployments(agent, keyword_embedder)
    result = search(agent, keyword_embedder, "what did we deploy last week", limit=10)
    assert contents(result)[0] == "deploy deploy"
    assert sorted(dates(result)[1:]) == [OUTSIDE, INSIDE]


def test_an_empty_window_changes_nothing(keyword_embedder):
    agent = agent_with()
    deployments(agent, keyword_embedder)
    ranked = []
    for time_window_legs in (True, False):
        result = memory_search(
            agent=agent,
            # "yesterday" (28 February) holds no memory
            query=MemoryQuery(text="what did we deploy yesterday", limit=10),
            embedder=keyword_embedder,
            now=NOW,
            config=MemoryRetrievalConfig(time_window_legs=time_window_legs),
        )
        ranked.append([(hit.memory.pk, hit.combined) for hit in result.hits])
    assert ranked[0] == ranked[1]
    assert len(ranked[0]) == 3


def test_the_anchor_is_the_given_date(keyword_embedder):
    agent = agent_with()
    deployments(agent, keyword_embedder)
    result = memory_search(
        agent=agent,
        query=MemoryQuery(text="what did we deploy yesterday", limit=10),
        embedder=keyword_embedder,
        now=NOW,
        anchor_time=datetime(2026, 2, 19, 12, tzinfo=UTC),  # yesterday: 18 February
    )
    assert dates(result)[0] == INSIDE


def test_a_year_window_adds_no_leg(keyword_embedder):
    agent = agent_with()
    deployments(agent, keyword_embedder)
    result = search(agent, keyword_embedder, "what did we deploy in 2026", limit=10)
    assert contents(result)[0] == "deploy deploy"


def facts(agent, embedder):
    store(agent, embedder, "python", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    store(agent, embedder, "database database", created_at=datetime(2026, 1, 2, tzinfo=UTC))
    store(agent, embedder, "database lunch", created_at=datetime(2026, 2, 20, tzinfo=UTC))


def test_latest_boost_ranks_the_newest_first_for_a_current_question(keyword_embedder):
    agent = agent_with(latest_boost=0.5)
    facts(agent, keyword_embedder)
    current = search(agent, keyword_embedder, "what is my current database", limit=3)
    assert contents(current) == ["database lunch", "database database", "python"]
    plain = search(agent, keyword_embedder, "what is my database", limit=3)
    assert contents(plain) == ["database database", "database lunch", "python"]


def test_latest_boost_zero_is_off(keyword_embedder):
    agent = agent_with()
    facts(agent, keyword_embedder)
    current = search(agent, keyword_embedder, "what is my current database", limit=3)
    assert contents(current) == ["database database", "database lunch", "python"]


def sessions(agent, embedder):
    store(agent, embedder, "python", created_at=datetime(2026, 2, 1, 10, tzinfo=UTC))
    store(agent, embedder, "python friday", created_at=datetime(2026, 2, 1, 10, 5, tzinfo=UTC))
    store(agent, embedder, "python lunch database", created_at=datetime(2026, 2, 5, tzinfo=UTC))
    store(agent, embedder, "lunch", created_at=datetime(2026, 1, 1, tzinfo=UTC))


def test_session_spread_takes_another_session_before_a_second_turn(keyword_embedder):
    spread, plain = agent_with(session_spread=1.0), agent_with()
    for agent in (spread, plain):
        sessions(agent, keyword_embedder)
    assert contents(search(spread, keyword_embedder, "python", limit=3)) == [
        "python",
        "python lunch database",
        "python friday",
    ]
    assert contents(search(plain, keyword_embedder, "python", limit=3)) == [
        "python",
        "python friday",
        "python lunch database",
    ]


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"time_window_legs": True}, "memory.retrieval.time_window_legs"),
        ({"latest_boost": 0.3}, "memory.retrieval.latest_boost"),
        ({"session_spread": 0.5}, "memory.retrieval.session_spread"),
    ],
)
def test_the_time_levers_are_rrf_only(fields, path):
    with pytest.raises(CompanyConfigError, match=rf"^{path}: is only used with"):
        parse_company_config({"memory": {"retrieval": {"fusion_strategy": "linear", **fields}}})
    linear = parse_company_config({"memory": {"retrieval": {"fusion_strategy": "linear"}}})
    assert linear.memory.retrieval.time_window_legs is False
