"""Replica routing without a standby: statement classification, the router's hard rules,
the settings, the fences written for agents and humans, and an unreachable replica.

The behaviour against a real streaming standby is in ``test_replicas.py``.
"""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from memory.core.models.request_log import RequestLogEntry
from synthorg.database import replica_database_settings
from synthorg.db import replicas
from tests.support.db_aliases import add_database_alias, remove_database_alias

ALIAS = "replica_1"


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ('INSERT INTO "memory_memory" VALUES (1)', True),
        ("  update x set a = 1", True),
        ("/* c */ DELETE FROM x", True),
        ("-- c\nMERGE INTO x USING y ON true WHEN MATCHED THEN DO NOTHING", True),
        ("TRUNCATE x", True),
        ("WITH d AS (DELETE FROM x RETURNING id) SELECT count(*) FROM d", True),
        ("WITH s AS (SELECT 1) SELECT * FROM s", False),
        ("SELECT set_config('hnsw.ef_search', '40', true);\nSELECT id FROM memory_memory", False),
        ("SELECT id FROM x FOR UPDATE", False),
        ("SELECT 'insert into x'", False),
        ("", False),
    ],
)
def test_statement_writes(sql, writes):
    assert replicas.statement_writes(sql) is writes


def test_replica_settings_from_urls():
    aliases = replica_database_settings(
        " postgresql://app:pw@db-r1:5432/synthorg, postgresql://app@/synthorg?host=/run/r2 ,", 60
    )
    assert list(aliases) == ["replica_1", "replica_2"]
    first, second = aliases["replica_1"], aliases["replica_2"]
    assert (first["HOST"], first["PORT"], first["USER"], first["NAME"]) == (
        "db-r1",
        "5432",
        "app",
        "synthorg",
    )
    assert first["OPTIONS"] == {"connect_timeout": "3"}
    assert first["TEST"] == {"MIRROR": "default"}
    assert (first["CONN_MAX_AGE"], first["CONN_HEALTH_CHECKS"]) == (60, True)
    assert second["HOST"] == "/run/r2"
    assert replica_database_settings("", 60) == {}


def test_router_keeps_writes_and_migrations_on_the_primary():
    router = replicas.ReplicaRouter()
    with replicas.reading_from(ALIAS):
        assert router.db_for_write(object) == "default"
        assert router.db_for_read(object) == ALIAS
    assert router.db_for_read(object) == "default"
    assert router.allow_migrate(ALIAS, "memory") is False
    assert router.allow_migrate("default", "memory") is True


@pytest.mark.django_db(transaction=True)
def test_without_replicas_nothing_is_fenced_and_reads_stay_on_the_primary(caller):
    stored = caller.client.post(
        "/api/v1/memories", {"content": "No replicas here.", "category": "semantic"}, format="json"
    )
    assert stored.status_code == 201
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {replicas.FENCE_TABLE}")
        assert cursor.fetchone() == (0,)
    with CaptureQueriesContext(connections["default"]) as queries:
        assert replicas.read_alias(f"agent:{caller.agent.pk}") == "default"
    assert len(queries) == 0


@pytest.fixture(scope="module")
def unreachable_replica():
    """A replica alias whose server does not exist (a socket directory with no server).

    Module-scoped so it is defined before the test's database fixture checks ``databases``;
    only the last test of the module uses it."""
    config = dict(connections["default"].settings_dict)
    config.update(
        ENGINE="django.db.backends.postgresql",
        HOST="/nonexistent-synthorg-replica",
        PORT="5499",
        CONN_MAX_AGE=0,
        TEST={**config["TEST"], "MIRROR": "default"},
    )
    add_database_alias(ALIAS, config)
    replicas.reset_replica_states()
    yield
    remove_database_alias(ALIAS)
    replicas.reset_replica_states()


@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_writes_fence_agents_and_humans_and_a_dead_replica_is_skipped(
    unreachable_replica, caller, peer, human_client, client
):
    stored = caller.client.post(
        "/api/v1/memories", {"content": "Fenced write.", "category": "semantic"}, format="json"
    )
    assert stored.status_code == 201
    fact = human_client.post(
        "/api/v1/org/facts", {"content": "Be excellent", "category": "core_policy"}, format="json"
    )
    assert fact.status_code == 201, fact.content
    assert peer.client.get("/api/v1/memories").status_code == 200  # a read: no fence
    with connections["default"].cursor() as cursor:
        cursor.execute(
            f"SELECT principal, lsn > 0, written_at <= clock_timestamp() "
            f"FROM {replicas.FENCE_TABLE} ORDER BY principal"
        )
        rows = cursor.fetchall()
    assert rows == sorted(
        [
            (f"agent:{caller.agent.pk}", True, True),
            (f"user:{human_client.membership.user.pk}", True, True),
        ]
    )
    # The replica cannot be reached: reads fall back to the primary, with no error …
    searched = peer.client.post("/api/v1/memories/search", {"query": "fenced"}, format="json")
    assert searched.status_code == 200
    assert replicas.read_alias(None) == "default"
    # the search wrote its request-log row: bookkeeping, so the searcher is not fenced
    assert RequestLogEntry.objects.filter(agent=peer.agent, kind="search").count() == 1
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT principal FROM {replicas.FENCE_TABLE} ORDER BY principal")
        assert f"agent:{peer.agent.pk}" not in {row[0] for row in cursor.fetchall()}
    # … and /healthz names it as down, the service degraded but serving.
    body = client.get("/healthz").json()
    assert body["status"] == "degraded"
    report = body["checks"]["replicas"]
    assert report["ok"] is False
    assert report["replicas"][ALIAS]["state"] == "down"
    assert report["replicas"][ALIAS]["lag_seconds"] is None
    assert report["replicas"][ALIAS]["error"]
