"""The dense leg: same-embedder vectors only, the exact and HNSW paths."""

from datetime import timedelta

import pytest

from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import dense as dense_module
from memory.core.selectors.search import memory_search
from tests.memory.core.selectors.search.helpers import NOW, contents, search, store
from tests.memory.factories import MemoryFactory

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


def test_path_choice_by_table_and_part_size(monkeypatch):
    for name, value in {
        "EXACT_SCAN_MAX_ROWS": 5_000,
        "HNSW_MIN_SHARE": 0.25,
        "PART_EXACT_MAX_ROWS": 20_000,
        "NARROW_PART_EXACT_MAX_ROWS": 0,
    }.items():
        monkeypatch.setattr(dense_module, name, value)
    choose = dense_module.choose_paths
    assert choose(5_000, [5_000, 10], depth=50) == ["exact", "exact"]
    # above the table threshold: a large share or a large part walks HNSW, a small one scans
    assert choose(10_000, [10_000, 2_000], depth=50) == ["hnsw", "exact"]
    assert choose(200_000, [30_000, 20_000], depth=50) == ["hnsw", "exact"]
    # until the index is built every part is scanned exactly
    assert choose(10_000, [10_000, 2_000], depth=50, index_ready=lambda part: False) == [
        "exact",
        "exact",
    ]
    # ... part by part: the index of one part's rows may be ready before the other's
    assert choose([10_000, 10_000], [10_000, 9_000], depth=50, index_ready=lambda p: p == 1) == [
        "exact",
        "hnsw",
    ]


def test_a_part_no_walk_covers_is_scanned_exactly_up_to_the_narrow_limit():
    """The product's rule, leg depth 50: a part needs a first walk of 6 × 50 / share; above
    pgvector's 1000 (share < 30 %) it is scanned exactly up to 64k rows."""
    choose = dense_module.choose_paths
    # 1M rows: one agent of 400k (needs 750), the company's 50k shared rows (5 %: 6000)
    assert choose(1_000_000, [400_000, 50_000], depth=50) == ["hnsw", "exact"]
    # an agent of 100k needs 3000, but is too large to scan: it walks at the cap
    assert choose(1_000_000, [100_000, 50_000], depth=50) == ["hnsw", "exact"]
    assert choose(1_000_000, [10_000, 50_000], depth=50) == ["exact", "exact"]
    assert choose(1_000_000, [64_000, 64_001], depth=50) == ["exact", "hnsw"]
    # 30 % of 200k needs exactly 1000 at depth 50; a deeper leg needs 2000: scanned
    assert choose(200_000, [60_000], depth=50) == ["hnsw"]
    assert choose(200_000, [60_000], depth=100) == ["exact"]
    # an empty part is never walked
    assert choose(1_000_000, [400_000, 0], depth=50) == ["hnsw", "exact"]


def test_each_part_is_judged_against_the_index_it_walks():
    """Private rows and shared rows have HNSW indexes of their own (vector_indexes): the
    company's 50k shared rows are all of the shared rows' index, not 5 % of the table."""
    choose = dense_module.choose_paths
    assert choose([950_000, 50_000], [400_000, 50_000], depth=50) == ["hnsw", "hnsw"]
    # another company's shared rows share that index: 50k of 500k shared rows is narrow
    assert choose([500_000, 500_000], [400_000, 50_000], depth=50) == ["hnsw", "exact"]
    # an index that holds few rows is scanned exactly, whatever the other part's holds
    assert choose([950_000, 4_000], [400_000, 4_000], depth=50) == ["hnsw", "exact"]
    with pytest.raises(ValueError, match="one index row count per part"):
        choose([950_000], [400_000, 50_000], depth=50)
    assert settings(50, [950_000, 50_000], [400_000, 50_000], ["hnsw", "hnsw"]) == walk(
        713  # the private part's 6 × 50 / (400k / 950k); the shared part needs 300
    )


def settings(depth, table_rows, part_rows, paths, iterative=True):
    return dense_module.hnsw_settings(
        depth, iterative, index_rows=table_rows, part_rows=part_rows, paths=paths
    )


def walk(ef, max_scan=20_000):
    return {
        "hnsw.ef_search": str(ef),
        "enable_sort": "off",
        "hnsw.iterative_scan": "strict_order",
        "hnsw.max_scan_tuples": str(max_scan),
    }


def test_the_walk_width_grows_with_one_over_the_walked_parts_share():
    # 40 % of the table: 6 × 50 / 0.4 = 750 (the exact shared part does not count)
    assert settings(50, 1_000_000, [400_000, 50_000], ["hnsw", "exact"]) == walk(750)
    # 10 %: 3000, capped at pgvector's widest
    assert settings(50, 1_000_000, [100_000, 50_000], ["hnsw", "exact"]) == walk(1000)
    # 90 %: 333.3, rounded up
    assert settings(50, 1_000_000, [900_000], ["hnsw"]) == walk(334)
    # one setting per statement: the widest any walked part needs (375 and 750)
    assert settings(50, 1_000_000, [800_000, 400_000], ["hnsw", "hnsw"]) == walk(750)
    # a deeper leg walks wider
    assert settings(100, 1_000_000, [900_000], ["hnsw"]) == walk(667)
    assert settings(300, 1_000_000, [900_000], ["hnsw"]) == walk(1000)


def test_the_iterative_resume_grows_with_one_over_the_smallest_walked_share():
    # 2 % of 10M: the walk is capped at 1000; the resume may visit 4 × 50 / 0.02 = 10,000
    # tuples, below the floor of 20,000
    assert settings(50, 10_000_000, [200_000], ["hnsw"]) == walk(1000, 20_000)
    # 0.2 % of 100M: 4 × 50 / 0.002 = 100,000 tuples
    assert settings(50, 100_000_000, [200_000], ["hnsw"]) == walk(1000, 100_000)


def test_without_iterative_scans_every_walk_is_the_widest():
    assert settings(50, 1_000_000, [400_000], ["hnsw"], iterative=False) == {
        "hnsw.ef_search": "1000",
        "enable_sort": "off",
    }


def test_the_search_statement_carries_the_width_of_the_parts_share(
    rrf_agent, keyword_embedder, monkeypatch
):
    """The settings the search sends follow the rows the planning round trip counted."""
    from django.db import connection

    from tests.persistence.factories import AgentFactory

    other = AgentFactory(company=rrf_agent.company)
    store(rrf_agent, keyword_embedder, *(f"deploy {i}" for i in range(6)))
    store(other, keyword_embedder, "note one", "note two")
    for name, value in {"EXACT_SCAN_MAX_ROWS": 0, "NARROW_PART_EXACT_MAX_ROWS": 0}.items():
        monkeypatch.setattr(dense_module, name, value)
    monkeypatch.setattr(dense_module, "HNSW_MIN_SHARE", 0.0)
    captured = []

    def capture(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        result = memory_search(
            agent=rrf_agent, query=MemoryQuery(text="deploy"), embedder=keyword_embedder,
            now=NOW, include_shared=False, legs=("dense",),
        )  # fmt: skip
    assert result.dense_paths == ["hnsw+exact"]  # 6 rows < the leg depth of 50
    sent, _statement, _params = walk_statement(captured, "walk_0")
    # the agent's 6 rows of the table's 8: share 0.75, first walk 6 × 50 / 0.75 = 400; the
    # walking statement is prepared and planned for its own values
    assert sent == {"plan_cache_mode": "force_custom_plan", **walk(400)}


def walk_statement(captured, marker: str) -> tuple[dict, str, list]:
    """The settings a captured walking search statement ran under (the statement before it
    in the same pipeline), the statement and its parameters."""
    index = next(i for i, (sql, _) in enumerate(captured) if marker in sql)
    settings_sql, settings_params = captured[index - 1]
    assert settings_sql.startswith("SELECT set_config(%s, %s, true), ")
    sent = dict(zip(settings_params[::2], settings_params[1::2], strict=True))
    return sent, *captured[index]


def explain_search_statement(settings: dict, statement: str, params) -> str:
    """EXPLAIN of a captured search statement, under its own walk settings."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for name, value in settings.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + statement, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_walk_in_the_search_statement_uses_the_embedders_partial_index(rrf_agent, monkeypatch):
    """The statement the search sends (under the settings sent with it) walks the query
    embedder's own HNSW index (memory.core.vector_indexes), not a scan."""
    from django.db import connection

    from memory.core.vector_indexes import index_name
    from synthorg.embedding import default_embedder

    embedder = default_embedder()
    store(rrf_agent, embedder, "deploy on friday", "lunch menu", "database backups")
    for name, value in {"EXACT_SCAN_MAX_ROWS": 0, "HNSW_MIN_SHARE": 0.0}.items():
        monkeypatch.setattr(dense_module, name, value)
    captured = []

    def capture(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        result = search(rrf_agent, embedder, "when do we deploy?")
    # 3 rows < the leg depth; the empty shared part is no share any walk covers: exact
    assert result.dense_paths == ["hnsw+exact", "exact"]
    plan = explain_search_statement(*walk_statement(captured, "walk_0"))
    private_index = index_name(embedder.embedder_id, embedder.dims, shared=False)
    assert f"Index Scan using {private_index}" in plan


def test_the_companys_shared_rows_walk_the_shared_rows_index(rrf_agent):
    """The shared part walks the index of shared rows, as a share of the shared rows: a few
    shared rows among many private ones are walked, not scanned (memory 0022), and another
    company's shared rows in the same index are never returned."""
    from django.db import connection

    from memory.core.vector_indexes import index_name
    from synthorg.embedding import default_embedder
    from tests.persistence.factories import AgentFactory, CompanyFactory

    embedder = default_embedder()
    colleague = AgentFactory(company=rrf_agent.company)
    store(colleague, embedder, *(f"private note number {i}" for i in range(30)))
    store(rrf_agent, embedder, "deploy checklist", shared=True)
    stranger = AgentFactory(company=CompanyFactory())
    store(stranger, embedder, "deploy checklist", shared=True)
    captured = []

    def capture(execute, sql, params, many, context):
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dense_module, "EXACT_SCAN_MAX_ROWS", 0)
        with connection.execute_wrapper(capture):
            result = search(rrf_agent, embedder, "deploy checklist")
    # the agent has no private rows (exact); the shared part is the company's share of the
    # shared rows' index (1 of 2): walked, then scanned since 1 row < the leg depth
    assert result.dense_paths == ["exact", "hnsw+exact"]
    assert [(h.memory.agent_id, h.is_shared) for h in result.hits] == [(rrf_agent.pk, True)]
    plan = explain_search_statement(*walk_statement(captured, "walk_1"))
    shared_index = index_name(embedder.embedder_id, embedder.dims, shared=True)
    assert f"Index Scan using {shared_index}" in plan


WALK_SETTINGS = ("plan_cache_mode", "enable_sort", "hnsw.ef_search", "hnsw.iterative_scan")


def _walk_settings_now():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT '[1,2]'::vector")  # loads pgvector: hnsw.* are defined from then
        cursor.execute(
            "SELECT " + ", ".join(f"current_setting('{name}', true)" for name in WALK_SETTINGS)
        )
        return dict(zip(WALK_SETTINGS, cursor.fetchone(), strict=True))


def _walking(agent, embedder, monkeypatch):
    store(agent, embedder, *(f"deploy {i}" for i in range(6)))
    for name, value in {"EXACT_SCAN_MAX_ROWS": 0, "HNSW_MIN_SHARE": 0.0}.items():
        monkeypatch.setattr(dense_module, name, value)


def test_a_walking_statement_is_prepared_and_planned_for_its_own_values(
    rrf_agent, keyword_embedder, monkeypatch
):
    """The connection keeps the walking statement prepared (parsed once) and PostgreSQL
    plans it for each search's values (custom plans, never a generic one)."""
    from django.db import connection

    _walking(rrf_agent, keyword_embedder, monkeypatch)
    for text in ("deploy", "deploy friday", "lunch"):
        result = memory_search(
            agent=rrf_agent, query=MemoryQuery(text=text), embedder=keyword_embedder, now=NOW,
            include_shared=False,
        )  # fmt: skip
        assert result.dense_paths == ["hnsw+exact"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            ["%walk_0%"],
        )
        assert cursor.fetchall() == [(0, 3)]


def test_walk_settings_end_with_the_statement_inside_an_outer_transaction(
    rrf_agent, keyword_embedder, monkeypatch
):
    """A test runs inside a transaction: the settings are restored after the statement."""
    _walking(rrf_agent, keyword_embedder, monkeypatch)
    before = _walk_settings_now()
    result = search(rrf_agent, keyword_embedder, "deploy")
    assert "hnsw+exact" in result.dense_paths
    assert _walk_settings_now() == before


@pytest.mark.django_db(transaction=True)
def test_walk_settings_end_with_the_statement_in_autocommit(keyword_embedder, monkeypatch):
    """Outside a transaction (as a request's search runs) the pipeline's settings end with
    its implicit transaction: nothing is left on the connection."""
    from tests.memory.core.selectors.search.helpers import RRF
    from tests.persistence.factories import AgentFactory, CompanyFactory

    agent = AgentFactory(company=CompanyFactory(config=RRF))
    _walking(agent, keyword_embedder, monkeypatch)
    before = _walk_settings_now()
    result = search(agent, keyword_embedder, "deploy")
    assert "hnsw+exact" in result.dense_paths
    assert result.hits
    assert _walk_settings_now() == before
