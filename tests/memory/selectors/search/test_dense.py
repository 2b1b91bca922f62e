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


def test_path_choice_by_table_and_part_size(monkeypatch):
    for name, value in {
        "EXACT_SCAN_MAX_ROWS": 5_000,
        "HNSW_MIN_SHARE": 0.25,
        "PART_EXACT_MAX_ROWS": 20_000,
    }.items():
        monkeypatch.setattr(dense_module, name, value)
    assert dense_module.choose_paths(5_000, [5_000, 10]) == ["exact", "exact"]
    # above the table threshold: a large share or a large part walks HNSW, a small one scans
    assert dense_module.choose_paths(10_000, [10_000, 2_000]) == ["hnsw", "exact"]
    assert dense_module.choose_paths(200_000, [30_000, 20_000]) == ["hnsw", "exact"]
    assert dense_module.ef_search(50, iterative=True) == 200
    assert dense_module.ef_search(300, iterative=True) == 1000
    assert dense_module.ef_search(50, iterative=False) == 1000


def test_the_walk_in_the_search_statement_uses_the_embedders_partial_index(rrf_agent, monkeypatch):
    """The statement the search sends (settings script and all) walks the query embedder's
    own HNSW index (memory.vector_indexes), not a scan."""
    from django.db import connection, transaction

    from memory.vector_indexes import index_name
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
    assert result.dense_paths == ["hnsw+exact", "hnsw+exact"]  # 3 rows < the leg depth
    script, params = next((sql, p) for sql, p in captured if "walk_0" in sql)
    settings_sql, statement = script.split(";\n", 1)
    n_settings = settings_sql.count("%s")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(settings_sql, params[:n_settings])
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + statement, params[n_settings:])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Index Scan using {index_name(embedder.embedder_id, embedder.dims)}" in plan
