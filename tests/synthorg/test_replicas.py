"""Read replicas against a real streaming standby (``synthorg.db.replicas``).

One standby per module, made from the test run's own primary with the embedded server's
``pg_basebackup -R`` and started with its ``pg_ctl`` on a socket of its own. The module is
skipped only when the server's binaries have no ``pg_basebackup``, or — with
``DATABASE_URL`` (an external server) — when that server refuses the base backup (no
replication right for the test's role).
"""

from __future__ import annotations

import copy

import pytest
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from memory.core.models import Memory
from persistence.models import Agent
from synthorg.database import current_embedded_server
from synthorg.db import replicas
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory
from tests.support.db_aliases import add_database_alias, remove_database_alias
from tests.support.standby import (
    STANDBY_PORT,
    Standby,
    StandbyUnavailable,
    server_binaries,
    wait_for,
)

ALIAS = "replica_1"

BIN = server_binaries()
pytestmark = [
    pytest.mark.skipif(BIN is None, reason="the embedded server's binaries have no pg_basebackup"),
    pytest.mark.django_db(transaction=True, databases=["default", ALIAS]),
]


def _primary_conninfo() -> str:
    server = current_embedded_server()
    if server is not None:
        return server.conninfo("postgres", "postgres")
    settings = connections["default"].settings_dict
    return (
        f"host={settings['HOST']} port={settings['PORT'] or 5432} user={settings['USER']} "
        f"password={settings['PASSWORD']} dbname=postgres"
    )


@pytest.fixture(scope="module")
def standby(django_db_setup, django_db_blocker):
    server = current_embedded_server()
    standby = Standby(
        _primary_conninfo(), user=server.system_user if server else None, binaries=BIN
    )
    try:
        standby.create()
    except StandbyUnavailable as exc:
        if server is None:
            pytest.skip(f"the external server refuses pg_basebackup: {exc}")
        raise
    config = copy.deepcopy(connections["default"].settings_dict)
    config.update(
        ENGINE="django.db.backends.postgresql",
        HOST=str(standby.socket_dir),
        PORT=str(STANDBY_PORT),
        CONN_MAX_AGE=0,
        TEST={**config["TEST"], "MIRROR": "default"},  # never flushed: it follows the primary
    )
    add_database_alias(ALIAS, config)
    try:
        yield standby
    finally:
        remove_database_alias(ALIAS)
        replicas.reset_replica_states()
        standby.destroy()


@pytest.fixture(autouse=True)
def fresh_states(standby):
    replicas.reset_replica_states()
    with override_settings(
        SYNTHORG_REPLICAS={
            "READ_YOUR_WRITES_SECONDS": 60.0,
            "MAX_LAG_SECONDS": 60.0,
            "RECHECK_SECONDS": 0.0,
        }
    ):
        yield
    with standby.superuser() as conn:
        if conn.execute("SELECT pg_is_wal_replay_paused()").fetchone()[0]:
            conn.execute("SELECT pg_wal_replay_resume()")
    replicas.reset_replica_states()


class StatementLog:
    """Which alias ran which statement, and whether that server was a standby."""

    def __init__(self):
        self.by_alias: dict[str, list[str]] = {}

    def watch(self, alias):
        def wrapper(execute, sql, params, many, context):
            self.by_alias.setdefault(alias, []).append(sql)
            return execute(sql, params, many, context)

        return connections[alias].execute_wrapper(wrapper)


def _replayed(standby: Standby) -> None:
    standby.wait_replayed()


def _store(caller, content: str, *, fenced: bool = True) -> str:
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": "semantic"}, format="json"
    )
    assert response.status_code == 201, response.content
    if not fenced:  # as if the write was long ago
        with connections["default"].cursor() as cursor:
            cursor.execute(f"DELETE FROM {replicas.FENCE_TABLE}")
    return response.json()["id"]


def _search(caller, query: str, log: StatementLog):
    with log.watch("default"), log.watch(ALIAS):
        response = caller.client.post("/api/v1/memories/search", {"query": query}, format="json")
    assert response.status_code == 200, response.content
    return [hit["memory"]["content"] for hit in response.json()["results"]]


def _search_sql(log: StatementLog, alias: str) -> list[str]:
    return [sql for sql in log.by_alias.get(alias, []) if "memory_memory" in sql]


def _fence_rows() -> dict[str, int]:
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT principal, lsn FROM {replicas.FENCE_TABLE}")
        return dict(cursor.fetchall())


def test_a_search_is_served_by_the_standby(standby):
    reader = make_agent_caller(company=CompanyFactory())
    content = "The billing service deploys on Fridays at noon."
    _store(reader, content, fenced=False)
    _replayed(standby)
    log = StatementLog()
    assert _search(reader, "when does billing deploy", log) == [content]
    # The search's statements ran on the standby, not on the primary …
    assert _search_sql(log, ALIAS)
    assert _search_sql(log, "default") == []
    # … and the connection that ran them is a server in recovery.
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        assert cursor.fetchone() == (True,)


def test_read_your_writes_on_a_paused_standby(standby):
    writer = make_agent_caller(company=CompanyFactory())
    other = make_agent_caller(company=writer.company)
    _replayed(standby)
    with standby.superuser() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        wait_for(
            lambda: (
                conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()[0] == "paused"
            ),
            "replay to pause",
        )
    content = "Staging is reset every Sunday night by the ops rota."
    memory_id = _store(writer, content)
    fences = _fence_rows()
    assert set(fences) >= {f"agent:{writer.agent.pk}"}
    assert f"agent:{other.agent.pk}" not in fences
    # The standby has not replayed the write: the writer's search reads on the primary …
    log = StatementLog()
    assert _search(writer, "when is staging reset", log) == [content]
    assert _search_sql(log, "default") and _search_sql(log, ALIAS) == []
    # … the list too …
    listed = writer.client.get("/api/v1/memories")
    assert [item["id"] for item in listed.json()["results"]] == [memory_id]
    # … while another agent's read still goes to the standby (and sees nothing of it yet).
    log = StatementLog()
    _search(other, "when is staging reset", log)
    assert _search_sql(log, ALIAS) and _search_sql(log, "default") == []
    # Once the standby replays past the write, the writer reads from it again.
    with standby.superuser() as conn:
        conn.execute("SELECT pg_wal_replay_resume()")
    _replayed(standby)
    log = StatementLog()
    assert _search(writer, "when is staging reset", log) == [content]
    assert _search_sql(log, ALIAS) and _search_sql(log, "default") == []


def test_a_lagging_standby_is_skipped(standby, settings):
    reader = make_agent_caller(company=CompanyFactory())
    _replayed(standby)
    settings.SYNTHORG_REPLICAS = {**settings.SYNTHORG_REPLICAS, "MAX_LAG_SECONDS": 0.0}
    with standby.superuser() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    _store(reader, "Lag marker.", fenced=False)  # WAL the paused standby does not replay
    with standby.superuser() as conn:
        wait_for(
            lambda: conn.execute(
                "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()"
            ).fetchone()[0],
            "the standby to receive WAL it does not replay",
        )
    log = StatementLog()
    assert _search(reader, "lag marker", log) == ["Lag marker."]
    assert _search_sql(log, ALIAS) == []
    health = reader.client.get("/healthz").json()["checks"]["replicas"]
    assert health["ok"] is False
    assert health["replicas"][ALIAS]["state"] == "lagging"
    assert health["replicas"][ALIAS]["lag_seconds"] > 0


def test_healthz_reports_the_standby_and_its_lag(standby, client):
    _replayed(standby)
    body = client.get("/healthz").json()
    # The standby replays the whole server: another xdist worker's writes since
    # ``_replayed`` may be in flight, so the lag is small, not necessarily 0.
    lag = body["checks"]["replicas"]["replicas"][ALIAS].pop("lag_seconds")
    assert isinstance(lag, float) and 0.0 <= lag < 60.0, lag
    assert body["checks"]["replicas"] == {
        "ok": True,
        "max_lag_seconds": 60.0,
        "replicas": {ALIAS: {"ok": True, "state": "streaming"}},
    }


def test_a_stopped_standby_falls_back_to_the_primary(standby, settings):
    reader = make_agent_caller(company=CompanyFactory())
    content = "Invoices are archived after ninety days."
    _store(reader, content, fenced=False)
    _replayed(standby)
    # Checked healthy and not rechecked before the read: the read itself meets the stop.
    settings.SYNTHORG_REPLICAS = {**settings.SYNTHORG_REPLICAS, "RECHECK_SECONDS": 3600.0}
    assert replicas.read_alias(None) == ALIAS
    connections[ALIAS].ensure_connection()
    standby.stop()
    try:
        log = StatementLog()
        assert _search(reader, "when are invoices archived", log) == [content]
        assert _search_sql(log, "default")
        assert replicas._state(ALIAS).state == "down"
        # The next reads skip it without trying (until the recheck), and /healthz says why.
        assert replicas.read_alias(None) == "default"
        body = reader.client.get("/healthz").json()
        assert body["status"] == "degraded"
        assert body["checks"]["replicas"]["replicas"][ALIAS]["state"] == "down"
        assert body["checks"]["database"] == {"ok": True}
    finally:
        standby.start()
        connections[ALIAS].close()


def test_writes_and_transactions_never_reach_the_standby(standby):
    reader = make_agent_caller(company=CompanyFactory())
    agent = Agent.objects.get(pk=reader.agent.pk)
    _replayed(standby)
    from django.db import transaction

    with replicas.reading_from(ALIAS):
        # An ORM write inside a replica read goes to the primary …
        memory = Memory.objects.create(
            agent=agent,
            company=agent.company,
            content="Written.",
            category="semantic",
            created_at=timezone.now(),
            updated_at=timezone.now(),
        )
        assert memory._state.db == "default"
        # … and so does every read inside a transaction on the primary.
        with transaction.atomic():
            assert Memory.objects.filter(pk=memory.pk).exists()
            assert Memory.objects.all().db == "default"
        assert Memory.objects.all().db == ALIAS
    assert Memory.objects.all().db == "default"
