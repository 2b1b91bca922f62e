"""memory_search / shared_search against real Postgres, with hand-computed scores."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.domain import MemoryStoreRequest
from memory.models import Memory
from memory.retrieval.query import MemoryQuery
from memory.selectors import search as search_module
from memory.selectors.search import memory_search, shared_search
from memory.services.store import memory_store_batch
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
LINEAR = {"memory": {"retrieval": {"fusion_strategy": "linear"}}}
# rrf_k 60 (not the product's 10): the hand-computed fusion scores below use it
RRF = {"memory": {"retrieval": {"fusion_strategy": "rrf", "rrf_k": 60}}}


def store(agent, embedder, *contents, shared=False, **fields):
    results = memory_store_batch(
        agent=agent,
        requests=[
            MemoryStoreRequest(
                content=c,
                category=fields.get("category", "semantic"),
                **{k: v for k, v in fields.items() if k != "category"},
            )
            for c in contents
        ],
        embedder=embedder,
        now=NOW,
        shared=shared,
        deduplicate=False,
    )
    return [Memory.objects.get(pk=r.id) for r in results]


def search(agent, embedder, text=None, legs=("dense", "sparse"), **fields):
    return memory_search(
        agent=agent, query=MemoryQuery(text=text, **fields), embedder=embedder, now=NOW, legs=legs
    )


def contents(result):
    return [hit.memory.content for hit in result.hits]


@pytest.fixture
def rrf_agent():
    return AgentFactory(company=CompanyFactory(config=RRF))


def test_bm25_in_sql_matches_the_hand_computed_formula(rrf_agent, keyword_embedder):
    d1, d2, _ = store(
        rrf_agent, keyword_embedder, "deploy deploy friday", "deploy database", "lunch menu"
    )
    assert (d1.doc_length, d2.doc_length) == (3, 2)
    # Another agent's rows are outside the scope: they must not change N, df or avgdl.
    store(AgentFactory(company=rrf_agent.company), keyword_embedder, "deploy " * 30)

    result = search(rrf_agent, keyword_embedder, "Deploying!", legs=("sparse",), limit=10)
    assert contents(result) == ["deploy deploy friday", "deploy database"]
    avgdl = 7 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = [
        idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / avgdl)),
        idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avgdl)),
    ]
    assert [hit.sparse_score for hit in result.hits] == pytest.approx(expected)
    assert [hit.sparse_rank for hit in result.hits] == [1, 2]


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


def test_query_embedder_failure_degrades_to_sparse(rrf_agent, keyword_embedder, failing_embedder):
    store(rrf_agent, keyword_embedder, "deploy deploy friday", "lunch menu")
    result = search(rrf_agent, failing_embedder, "deploy")
    assert result.degraded == ["dense"]
    assert contents(result) == ["deploy deploy friday"]
    assert result.hits[0].dense_rank is None and result.hits[0].sparse_rank == 1


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


def test_hnsw_path_with_exact_fallback(rrf_agent, keyword_embedder, monkeypatch):
    store(rrf_agent, keyword_embedder, "deploy one", "deploy two friday", "lunch three")
    monkeypatch.setattr(search_module, "EXACT_SCAN_MAX_ROWS", 1)
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


@pytest.mark.django_db(transaction=True)
def test_common_lexemes_score_candidates_but_do_not_find_them(keyword_embedder):
    """A lexeme in ≥ 20 % of the table's rows (ANALYZE statistics) no longer finds
    candidates; it still scores the ones the rare lexemes find, with df = share × N."""
    from tests.support.db_roles import owner_cursor

    rrf_agent = AgentFactory(company=CompanyFactory(config=RRF))
    store(rrf_agent, keyword_embedder, *[f"deploy step {i}" for i in range(40)])
    billing = store(rrf_agent, keyword_embedder, "billing deploy deploy", "billing invoices")
    with owner_cursor() as cursor:  # statistics are the owner's to refresh (autovacuum's)
        cursor.execute("ANALYZE memory_memory")
    common = search_module.common_lexemes(["deploy", "bill", "step"])
    assert set(common) == {"deploy", "step"} and common["deploy"] == pytest.approx(41 / 42)

    result = search(rrf_agent, keyword_embedder, "billing deploy", legs=("sparse",), limit=10)
    # the shorter document wins: "deploy" (df ≈ N) adds almost nothing to the other
    assert [hit.memory.pk for hit in result.hits] == [billing[1].pk, billing[0].pk]
    n, avgdl = 42, (40 * 3 + 3 + 2) / 42
    idf_bill = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    df_deploy = common["deploy"] * n
    idf_deploy = math.log(1 + (n - df_deploy + 0.5) / (df_deploy + 0.5))

    def term(idf, tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    assert [hit.sparse_score for hit in result.hits] == pytest.approx(
        [term(idf_bill, 1, 2), term(idf_bill, 1, 3) + term(idf_deploy, 2, 3)]
    )
    # a query of common lexemes only runs unchanged: every "deploy" row is a candidate
    alone = search(rrf_agent, keyword_embedder, "deploy", legs=("sparse",), limit=100)
    assert len(alone.hits) == 41
