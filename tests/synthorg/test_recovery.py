"""``manage.py serve`` recovers by itself: kill -9 of qcluster, a web worker, the gunicorn
master and the embedded postmaster, each followed by the service working again.

Real processes throughout (no mocks). Every wait polls for the outcome with a generous
deadline and asserts the outcome, never the time it took.
"""

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from django.db import connection

from synthorg.embedded_pg import read_postmaster
from tests.synthorg.test_serve import ROOT, descendants, free_port

DEADLINE_S = 90


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S):
    """Poll ``condition`` until it returns a truthy value; fail naming ``what`` otherwise."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"not within {deadline_s} s: {what}")


def healthz_status(port: int) -> int | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


def cmdline(proc: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return proc.cmdline()
    return []


def programs(serve_pid: int, marker: str) -> list[psutil.Process]:
    """Processes under ``serve`` whose command line contains ``marker``."""
    return [p for p in descendants(serve_pid) if any(marker in part for part in cmdline(p))]


def program_leader(serve_pid: int, marker: str) -> psutil.Process | None:
    """The process supervisord started for a program (its parent is supervisord). For
    ``qcluster``: the default cluster's, not the LLM cluster's (``Q_CLUSTER_NAME=llm``)."""
    for proc in programs(serve_pid, marker):
        with contextlib.suppress(psutil.Error):
            if "supervisor.supervisord" not in " ".join(proc.parent().cmdline()):
                continue
            if "Q_CLUSTER_NAME" not in proc.environ():
                return proc
    return None


def llm_cluster(serve_pid: int) -> psutil.Process | None:
    """A process of the LLM cluster (``Q_CLUSTER_NAME=llm manage.py qcluster``)."""
    for proc in programs(serve_pid, "qcluster"):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("Q_CLUSTER_NAME") == "llm":
                return proc
    return None


@contextlib.contextmanager
def serving(env: dict, *args: str):
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started: list[psutil.Process] = []
    try:
        wait_for(lambda: serve.poll() is not None or healthz_status(port) == 200, "serving")
        assert serve.poll() is None, serve.stdout.read()
        yield serve, port
        started = descendants(serve.pid)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGINT)
        try:
            output, _ = serve.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            output, _ = serve.communicate()
    assert serve.returncode == 0, output
    assert output.rstrip().endswith("Stopped."), output
    _gone, alive = psutil.wait_procs(started, timeout=30)
    assert alive == [], [cmdline(p) for p in alive]


@pytest.fixture
def test_database_url(django_db_setup, django_db_blocker):
    """``DATABASE_URL`` of the migrated test database (app role), straight to the server."""
    fields = connection.settings_dict
    assert fields["NAME"].startswith("test_"), fields["NAME"]  # never the development database
    yield (
        f"postgresql://{fields['USER']}@/{fields['NAME']}"
        f"?host={fields['HOST']}&port={fields['PORT'] or 5432}"
    )
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        others = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        cursor.execute(f"SELECT pg_terminate_backend(pid) FROM ({others}) AS s")


def task_ran(django_db_blocker, group: str) -> bool:
    from django_q.models import Task

    with django_db_blocker.unblock():
        return Task.objects.filter(group=group, success=True).exists()


def enqueue(django_db_blocker, group: str) -> None:
    from django_q.tasks import async_task

    with django_db_blocker.unblock():
        async_task("math.floor", 2.5, group=group)


# The test database (transactional: serve's processes must see what this test commits); a
# test without the mark would hand serve the development database's name.
@pytest.mark.django_db(transaction=True)
def test_killed_qcluster_gunicorn_worker_and_master_are_replaced(
    test_database_url, django_db_blocker
):
    env = dict(os.environ, DATABASE_URL=test_database_url, Q_WORKERS="1")
    env.pop("DATABASE_OWNER_URL", None)
    groups = []
    try:
        with serving(env, "--web-workers", "1") as (serve, port):
            # q2: the qcluster process dies; a new cluster runs a task queued afterwards,
            # and the dead cluster's sentinel and workers are gone (no second cluster).
            cluster = wait_for(lambda: program_leader(serve.pid, "qcluster"), "qcluster up")
            wait_for(lambda: llm_cluster(serve.pid), "the LLM cluster up")
            old_cluster = [cluster, *cluster.children(recursive=True)]
            cluster.kill()
            wait_for(
                lambda: (p := program_leader(serve.pid, "qcluster")) and p.pid != cluster.pid,
                "a new qcluster",
            )
            _gone, alive = psutil.wait_procs(old_cluster, timeout=DEADLINE_S)
            assert alive == []
            groups.append(f"recovery-{uuid.uuid4().hex}")
            enqueue(django_db_blocker, groups[-1])
            wait_for(lambda: task_ran(django_db_blocker, groups[-1]), "the queued task ran")

            # A web worker dies: gunicorn's arbiter forks a new one; the port serves again.
            master = program_leader(serve.pid, "gunicorn")
            worker = master.children()[0]
            worker.kill()
            wait_for(
                lambda: [w.pid for w in master.children()] not in ([], [worker.pid]),
                "a new web worker",
            )
            wait_for(lambda: healthz_status(port) == 200, "serving after a worker died")

            # The gunicorn master dies: supervisord starts a new one, its orphaned workers
            # (which still hold the port) are killed, and the port serves again.
            orphans = master.children()
            master.kill()
            wait_for(
                lambda: (p := program_leader(serve.pid, "gunicorn")) and p.pid != master.pid,
                "a new gunicorn master",
            )
            _gone, alive = psutil.wait_procs(orphans, timeout=DEADLINE_S)
            assert alive == []
            wait_for(lambda: healthz_status(port) == 200, "serving after the master died")
            assert serve.poll() is None
    finally:
        from django_q.models import Task

        with django_db_blocker.unblock():
            Task.objects.filter(group__in=groups).delete()


def test_killed_embedded_postmaster_is_restarted_without_a_human(server_dir: Path):
    """The test run's own server is shared with the whole suite, so this one kills the
    postmaster of a throw-away embedded data directory (``SYNTHORG_PGDATA``)."""
    pgdata = server_dir / "pgdata"
    env = dict(os.environ, SYNTHORG_PGDATA=str(pgdata))
    for name in ("DATABASE_URL", "DATABASE_OWNER_URL", "SYNTHORG_TEST_DATABASE"):
        env.pop(name, None)
    with serving(env, "--web-workers", "1", "--no-worker") as (serve, port):
        postmaster = read_postmaster(pgdata)
        assert postmaster is not None
        os.kill(postmaster.pid, signal.SIGKILL)

        def served_by_a_new_server() -> bool:
            # A backend that has not yet noticed its postmaster's death may still answer one
            # health check: the server was restarted only once a new postmaster is ready.
            restarted = read_postmaster(pgdata)
            return (
                healthz_status(port) == 200
                and restarted is not None
                and restarted.pid != postmaster.pid
                and restarted.status == "ready"
            )

        wait_for(served_by_a_new_server, "serving from a new postmaster after the old died")
        assert serve.poll() is None
    # serve's processes were the server's last users: it is stopped with them.
    wait_for(lambda: read_postmaster(pgdata) is None, "the server stopped after serve")
