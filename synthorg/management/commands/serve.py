"""Serve the web app (gunicorn) and the django-q2 cluster under supervisord; Ctrl-C stops all.

The web app is ``synthorg.asgi:application`` on uvicorn workers: the MCP server at
``/mcp/`` and the Django app (in ``WEB_THREADS`` threads per worker) on one port.

What restarts what (a dead q2 cluster, gunicorn master or worker) and with which back-off is
``synthorg.supervision``; this command writes its supervisord configuration under
``var/supervisor/`` and runs supervisord in the foreground. ``SIGINT``/``SIGTERM`` to this
command stop supervisord, which stops every program at once, each within
``STOP_GRACE_SECONDS`` (then its whole process group is killed). supervisord is also told to
stop if this command is killed outright (``PR_SET_PDEATHSIG`` on Linux), so nothing outlives
it.
"""

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import uuid

import psutil
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from synthorg.health import llm_banner
from synthorg.secret_key_guard import development_key_refusal
from synthorg.supervision import (
    MARKER_ENV,
    STOP_GRACE_SECONDS,
    Program,
    exit_now,
    listener_of,
    wake,
    write_config,
)

PR_SET_PDEATHSIG = 1


def _stop_with_parent() -> None:
    """In the child before exec: receive SIGTERM when the parent (this command) dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Command(BaseCommand):
    help = "Run the web server on 127.0.0.1:PORT and the django-q2 worker cluster."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument(
            "--web-workers", type=int, default=int(os.environ.get("WEB_WORKERS", "2"))
        )
        parser.add_argument(
            "--web-threads",
            type=int,
            default=int(os.environ.get("WEB_THREADS", "8")),
            help="Threads per web worker serving the Django app.",
        )
        parser.add_argument("--no-worker", action="store_true", help="Do not start qcluster.")

    def handle(self, *args, host, port, web_workers, web_threads, no_worker, **options):
        refusal = development_key_refusal([host])
        if refusal:
            raise CommandError(refusal)
        web = [
            sys.executable,
            "-m",
            "gunicorn",
            "synthorg.asgi:application",
            "--worker-class",
            "uvicorn_worker.UvicornWorker",
            "--config",
            "python:synthorg.gunicorn_conf",
            "--bind",
            f"{host}:{port}",
            "--workers",
            str(web_workers),
            "--access-logfile",
            "-",
            "--graceful-timeout",
            str(STOP_GRACE_SECONDS),
        ]
        programs = {"web": Program(web)}
        if not no_worker:
            # q2's qcluster that exits as soon as it has stopped (serve_qcluster).
            qcluster = [sys.executable, str(settings.BASE_DIR / "manage.py"), "serve_qcluster"]
            # q2's cluster stops its own sentinel and workers on SIGTERM (synthorg.supervision).
            programs["worker"] = Program(qcluster, signal_leader_only=True)
            # LLM work has a cluster of its own (synthorg.schedules.LLM_CLUSTER).
            env = [shutil.which("env") or "/usr/bin/env", "Q_CLUSTER_NAME=llm"]
            programs["worker-llm"] = Program(env + qcluster, signal_leader_only=True)
        config = write_config(
            var_dir=settings.BASE_DIR / "var", name=f"serve-{port}", programs=programs
        )
        supervisord = subprocess.Popen(
            [sys.executable, "-m", "supervisor.supervisord", "-c", str(config)],
            env={
                **os.environ,
                "WEB_THREADS": str(web_threads),
                MARKER_ENV: uuid.uuid4().hex,
            },
            preexec_fn=_stop_with_parent if sys.platform.startswith("linux") else None,
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Serving on http://{host}:{port}/ (admin at /admin/, API docs at "
                f"/api/docs/, MCP at /mcp/); press Ctrl-C to stop."
            )
        )
        line, warn = llm_banner()
        self.stdout.write(self.style.WARNING(line) if warn else line)
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True
            # Found first: once supervisord acts on the signal, its listener exits.
            supervisor: psutil.Process | None = None
            listener: psutil.Process | None = None
            with contextlib.suppress(psutil.Error):
                supervisor = psutil.Process(supervisord.pid)
                listener = listener_of(supervisor)
            with contextlib.suppress(ProcessLookupError):
                supervisord.send_signal(signal.SIGTERM)
            # supervisord acts on the signal when its poll (up to 1 s) ends; end it now.
            if supervisor is not None:
                wake(supervisor, listener)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            supervisord.wait()
        finally:
            if supervisord.poll() is None:
                stop()
                try:
                    # supervisord stops the programs at once, each within the grace.
                    supervisord.wait(timeout=STOP_GRACE_SECONDS + 10)
                except subprocess.TimeoutExpired:
                    supervisord.kill()
                    supervisord.wait()
        if not stopping:
            raise CommandError(
                f"supervisord exited ({supervisord.returncode}) without being asked to; "
                "see the log above."
            )
        self.stdout.write("Stopped.")
        # Every process serve started has ended; skip this interpreter's teardown.
        exit_now(0)
