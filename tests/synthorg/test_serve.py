"""``manage.py serve`` (``make run``): Ctrl-C stops every process it started."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


class SocketProxy:
    """A unix-socket PostgreSQL proxy the test can pull the plug on (the database 'dies')."""

    def __init__(self, target: str):
        self.target = target
        self.dir = tempfile.mkdtemp(prefix="pgproxy-")
        self.path = os.path.join(self.dir, ".s.PGSQL.5432")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen(64)
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.hung = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.hung.is_set():
                with self.lock:
                    self.sockets.append(client)  # accepted, never answered
                continue
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.target)
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while data := src.recv(65536):
                if not self.hung.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def hang(self):
        """The server stops answering: connections stay open, queries never return."""
        self.hung.set()

    def pull_the_plug(self):
        self.listener.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
        with self.lock:
            for s in self.sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.fixture
def proxied_database_url(django_db_setup, django_db_blocker):
    """``DATABASE_URL`` of the migrated test database (app role) through a proxy."""
    fields = connection.settings_dict
    assert fields["NAME"].startswith("test_"), fields["NAME"]  # never the development database
    proxy = SocketProxy(os.path.join(fields["HOST"], f".s.PGSQL.{fields['PORT'] or 5432}"))
    yield proxy, f"postgresql://{fields['USER']}@/{fields['NAME']}?host={proxy.dir}"
    proxy.pull_the_plug()
    # The killed processes' server sessions end once they notice the closed sockets; wait
    # for that (then end stragglers) so the test database can be dropped at the end.
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        others = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        for _ in range(100):
            cursor.execute(others)
            if not cursor.fetchall():
                break
            time.sleep(0.1)
        cursor.execute(f"SELECT pg_terminate_backend(pid) FROM ({others}) AS s")


# The test database: a test without the mark would hand serve the development database.
@pytest.mark.django_db(transaction=True)
def test_ctrl_c_stops_web_and_q2_workers_even_with_the_database_down(proxied_database_url):
    proxy, url = proxied_database_url
    env = dict(os.environ, DATABASE_URL=url, Q_WORKERS="2")
    env.pop("DATABASE_OWNER_URL", None)
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(free_port()), "--web-workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    try:
        # gunicorn master + 1 worker, q2 qcluster + sentinel + monitor + pusher + 2 workers.
        started = []
        for _ in range(1200):
            started = descendants(serve.pid)
            if len(started) >= 8:
                break
            if serve.poll() is not None:
                pytest.fail(f"serve exited early:\n{serve.stdout.read()}")
            time.sleep(0.1)
        assert len(started) >= 8, [p.cmdline() for p in started]
        proxy.hang()  # the database stops answering under the running cluster
        time.sleep(2)
        started = descendants(serve.pid)
        # Ctrl-C in a terminal signals the whole foreground process group.
        os.killpg(serve.pid, signal.SIGINT)
        output, _ = serve.communicate(timeout=120)
    finally:
        if serve.poll() is None:
            serve.kill()
    assert serve.returncode == 0, output
    assert output.rstrip().endswith("Stopped."), output
    _gone, alive = psutil.wait_procs(started, timeout=10)
    assert alive == [], [p.cmdline() for p in alive]


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_lets_each_q2_cluster_stop_its_own_processes(proxied_database_url, tmp_path):
    """SIGTERM goes to each ``qcluster`` process alone, whose sentinel then stops its pusher,
    workers and monitor itself; before, the whole group was signalled, the sentinel died at
    once (q2 leaves SIGTERM at its default there) and ``qcluster`` hung until SIGKILL."""
    _proxy, url = proxied_database_url
    env = dict(os.environ, DATABASE_URL=url, Q_WORKERS="1", Q_LLM_WORKERS="1")
    env.pop("DATABASE_OWNER_URL", None)
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        serve = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "serve",
                "--port",
                str(free_port()),
                "--web-workers",
                "1",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            for _ in range(1200):
                if log.read_text().count("] running.") >= 2 or serve.poll() is not None:
                    break
                time.sleep(0.1)
            assert log.read_text().count("] running.") == 2, log.read_text()
            started = descendants(serve.pid)
            # SIGINT to serve alone (``kill -INT``): a terminal's Ctrl-C also reaches
            # supervisord, which may then start its stop on its own (woken by a program's
            # output) before serve's wake, and the wake is moot; here only serve's wake can
            # end supervisord's poll early.
            os.kill(serve.pid, signal.SIGINT)
            serve.wait(timeout=120)
        finally:
            if serve.poll() is None:
                serve.kill()
    output = log.read_text()
    assert serve.returncode == 0, output
    assert "\nStopped.\n" in output, output  # the programs' lines may come after serve's
    # each cluster's sentinel ran its own stop (the default cluster's and the LLM one's)
    assert output.count("stopping cluster processes") == 2, output
    # serve woke supervisord (synthorg.supervision.wake) instead of leaving it in its poll
    assert "synthorg.supervision: stop requested" in output, output
    _gone, alive = psutil.wait_procs(started, timeout=10)
    assert alive == [], [p.cmdline() for p in alive]
