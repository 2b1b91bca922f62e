"""Migration memory 0022: each (embedder, width)'s one HNSW index over all its rows becomes
an index over its private rows and one over its shared rows, built concurrently; reversed,
the one index comes back."""

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection

from memory.core.vector_indexes import LEGACY_PREFIX, index_name
from synthorg.db.roles import owner_connection
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db(transaction=True)

EMBEDDER, DIMS = "openai:split-migration-test", 64
SPLIT = importlib.import_module("memory.core.migrations.0022_vector_indexes_private_and_shared")
LEGACY = importlib.import_module("memory.core.migrations.0011_embedding_any_width")


def index_definitions() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_memory' "
            "AND indexdef LIKE %s",
            [f"%{EMBEDDER}%"],
        )
        return dict(cursor.fetchall())


def run(function) -> None:
    with owner_connection() as owner:
        function(None, SimpleNamespace(connection=owner))


def test_the_one_index_becomes_a_private_and_a_shared_one_and_back(monkeypatch, capsys):
    MemoryFactory(
        embedding=[1.0] + [0.0] * (DIMS - 1), embedder_id=EMBEDDER, embedding_status="ready"
    )
    private = index_name(EMBEDDER, DIMS, shared=False)
    shared = index_name(EMBEDDER, DIMS, shared=True)
    with owner_connection() as owner, owner.cursor() as cursor:
        for name in (private, shared):
            cursor.execute(f"DROP INDEX IF EXISTS {name}")
        cursor.execute(LEGACY.create_index_sql(EMBEDDER, DIMS, concurrently=True))
    [legacy] = index_definitions()
    assert legacy.startswith(LEGACY_PREFIX) and legacy not in (private, shared)

    run(SPLIT.split_indexes)
    assert "building" not in capsys.readouterr().out  # a small table: builds are not announced
    after = index_definitions()
    assert set(after) == {private, shared}
    assert after[private].endswith(f"vector_dims(embedding) = {DIMS}) AND (NOT is_shared))")
    assert after[shared].endswith(f"vector_dims(embedding) = {DIMS}) AND is_shared)")

    run(SPLIT.merge_indexes)
    assert set(index_definitions()) == {legacy}
    # leave the database as the migrations do; a large table announces each build
    monkeypatch.setattr(SPLIT, "ANNOUNCE_ABOVE_ROWS", -2)  # reltuples is -1 before ANALYZE
    run(SPLIT.split_indexes)
    assert set(index_definitions()) == {private, shared}
    out = capsys.readouterr().out
    assert f"building {private} (private rows of {EMBEDDER}, {DIMS} dims) …" in out
    assert f"building {shared} (shared rows of {EMBEDDER}, {DIMS} dims) …" in out
    assert f"built {shared} in " in out
