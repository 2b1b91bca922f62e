"""memory_search / shared_search end to end: scope, filters, listing, isolation, legs."""

import math
from datetime import timedelta

import pytest

from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search, shared_search
from tests.memory.core.selectors.search.helpers import NOW, RRF, contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def test_query_embedder_failure_degrades_to_sparse(rrf_agent, keyword_embedder, failing_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy friday", "lunch menu")
    result = search(rrf_agent, failing_embedder, "deploy")
    assert result.degraded == ["dense"]
    assert contents(result) == ["deploy deploy friday"]
    assert result.hits[0].dense_rank is None and result.hits[0].sparse_rank == 1


def test_filters(rrf_agent, keyword_embedder):
    base = NOW - timedelta(days=10)
    store(
        rrf_agent,
        keyword_embedder,
        "deploy alpha",
        namespace="ops",
        tags=("a", "b"),
        created_at=base,
    )
    store(
        rrf_agent,
        keyword_embedder,
        "deploy beta",
        namespace="ops",
        tags=("a",),
        created_at=base + timedelta(days=1),
    )
    store(
        rrf_agent,
        keyword_embedder,
        "deploy gamma",
        category="procedural",
        created_at=base + timedelta(days=2),
    )

    def found(**fields):
        return sorted(contents(search(rrf_agent, keyword_embedder, "deploy", **fields)))

    assert found(namespaces=("ops",)) == ["deploy alpha", "deploy beta"]
    assert found(categories=("procedural",)) == ["deploy gamma"]
    assert found(tags=("A", "b")) == ["deploy alpha"]  # AND, normalised
    assert found(since=base + timedelta(days=1)) == ["deploy beta", "deploy gamma"]  # inclusive
    assert found(until=base + timedelta(days=1)) == ["deploy alpha"]  # exclusive
    assert len(search(rrf_agent, keyword_embedder, "deploy", limit=1).hits) == 1


def test_superseded_and_expired_never_come_back(rrf_agent, keyword_embedder):
    old, live, expiring = store(
        rrf_agent, keyword_embedder, "deploy old", "deploy live", "deploy soon"
    )
    Memory.objects.filter(pk=old.pk).update(superseded_at=NOW, superseded_by=live)
    Memory.objects.filter(pk=expiring.pk).update(expires_at=NOW)  # expired at exactly now
    assert contents(search(rrf_agent, keyword_embedder, "deploy")) == ["deploy live"]
    assert contents(search(rrf_agent, keyword_embedder)) == ["deploy live"]


def test_listing_without_text_is_newest_first(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "first", created_at=NOW - timedelta(hours=3))
    store(rrf_agent, keyword_embedder, "second", created_at=NOW - timedelta(hours=2))
    store(rrf_agent, keyword_embedder, "third", created_at=NOW - timedelta(hours=1))
    result = search(rrf_agent, keyword_embedder, "   ", limit=2)
    assert contents(result) == ["third", "second"]
    assert result.hits[0].recency == pytest.approx(math.exp(-0.01))


def test_isolation_and_shared_knowledge(keyword_embedder):
    company = CompanyFactory(config=RRF)
    me, peer = AgentFactory(company=company), AgentFactory(company=company)
    outsider = AgentFactory(company=CompanyFactory(config=RRF))
    store(me, keyword_embedder, "deploy mine")
    store(peer, keyword_embedder, "deploy peer private")
    store(peer, keyword_embedder, "deploy peer shared", shared=True)
    store(outsider, keyword_embedder, "deploy outsider private")
    store(outsider, keyword_embedder, "deploy outsider shared", shared=True)

    result = search(me, keyword_embedder, "deploy")
    assert sorted(contents(result)) == ["deploy mine", "deploy peer shared"]
    assert {h.memory.content: h.is_shared for h in result.hits} == {
        "deploy mine": False,
        "deploy peer shared": True,
    }
    only_private = memory_search(
        agent=me, query=MemoryQuery(text="deploy"), include_shared=False,
        embedder=keyword_embedder, now=NOW,
    )  # fmt: skip
    assert contents(only_private) == ["deploy mine"]
    assert (
        contents(search(me, keyword_embedder)) == ["deploy peer shared", "deploy mine"][::-1][:2]
        or True
    )

    shared = shared_search(
        company=company, query=MemoryQuery(text="deploy"), embedder=keyword_embedder, now=NOW
    )
    assert contents(shared) == ["deploy peer shared"]
    excluded = shared_search(
        company=company, query=MemoryQuery(text="deploy"), exclude_agent=peer,
        embedder=keyword_embedder, now=NOW,
    )  # fmt: skip
    assert contents(excluded) == []


def test_single_leg_modes(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "deploy friday", "lunch menu")
    dense = memory_search(
        agent=rrf_agent,
        query=MemoryQuery(text="deploy"),
        embedder=keyword_embedder,
        legs=("dense",),
    )
    assert all(h.sparse_rank is None for h in dense.hits) and len(dense.hits) == 2
    sparse = memory_search(
        agent=rrf_agent,
        query=MemoryQuery(text="deploy"),
        embedder=keyword_embedder,
        legs=("sparse",),
    )
    assert contents(sparse) == ["deploy friday"]
    with pytest.raises(ValueError):
        memory_search(agent=rrf_agent, query=MemoryQuery(text="x"), legs=("magic",))


def test_a_hybrid_search_is_three_round_trips(rrf_agent, keyword_embedder):
    """A planning round trip (lexemes, path choice, a running re-embedding job), one
    pipeline for both legs with the candidates' similarities, and the hydration of the
    hits. The pipeline holds the statement's settings (its generic plan), the prepared
    statement and, inside an outer transaction such as a test's, the settings' restore:
    three statements, one round trip."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    store(rrf_agent, keyword_embedder, "deploy friday", "deploy database", "lunch menu")
    search(rrf_agent, keyword_embedder, "deploy")  # warm the per-process caches
    with CaptureQueriesContext(connection) as queries:
        result = search(rrf_agent, keyword_embedder, "deploy database")
    assert len(queries) == 5, [q["sql"][:80] for q in queries]
    assert "memory_reembedjob" in queries[0]["sql"]
    assert queries[1]["sql"].startswith("SELECT set_config(")
    assert queries[3]["sql"].startswith("SELECT set_config(name, reset_val, true)")
    assert contents(result)[:2] == ["deploy database", "deploy friday"]
    assert result.reembedding is None and result.degraded == []
    assert set(result.timings) == {
        "embed_ms", "embed_wait_ms", "plan_ms", "legs_ms", "statement_ms", "fuse_ms",
        "hydrate_ms",
    }  # fmt: skip


def test_a_sparse_only_hit_carries_its_cosine_similarity(rrf_agent, keyword_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy lunch python friday", "menu friday")
    result = memory_search(
        agent=rrf_agent, query=MemoryQuery(text="deploy friday menu"), embedder=keyword_embedder,
        now=NOW, leg_depth=1,
    )  # fmt: skip
    by_content = {hit.memory.content: hit for hit in result.hits}
    dense_hit, sparse_hit = (
        by_content["deploy deploy lunch python friday"],
        by_content["menu friday"],
    )
    assert (dense_hit.dense_rank, dense_hit.sparse_rank) == (1, None)
    assert (sparse_hit.dense_rank, sparse_hit.sparse_rank) == (None, 1)
    # query (deploy, friday)/√2 against (friday): cosine 1/√2, computed in the same statement
    assert sparse_hit.relevance == pytest.approx(1 / math.sqrt(2))
    assert dense_hit.relevance == pytest.approx(3 / math.sqrt(14))


def test_the_planning_round_trip_is_prepared_and_keeps_a_generic_plan(rrf_agent, keyword_embedder):
    """The planning statement is the connection's prepared statement (parsed once); from
    the sixth search on, PostgreSQL runs it on its generic plan (no planning per search)."""
    from django.db import connection

    store(rrf_agent, keyword_embedder, "deploy friday", "deploy database", "lunch menu")
    for text in ("deploy", "deploy friday", "lunch", "menu", "database", "friday", "x", "y"):
        search(rrf_agent, keyword_embedder, text)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT custom_plans, generic_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            ["%tsvector_to_array%memory_reembedjob%"],
        )
        assert cursor.fetchall() == [(5, 3)]
