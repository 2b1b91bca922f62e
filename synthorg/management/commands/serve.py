"""Serve the web app (gunicorn) and the django-q2 cluster together; Ctrl-C stops both.

The web app is ``synthorg.asgi:application`` on uvicorn workers: the MCP server at
``/mcp/`` and the Django app (in ``WEB_THREADS`` threads per worker) on one port.

Each child runs in its own process group, and stopping signals the whole group: gunicorn's
and q2's workers go with their parents even when a parent cannot stop them itself (q2 with
the database down), and whatever is still alive after the grace period is killed.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from synthorg.secret_key_guard import development_key_refusal

GRACE_SECONDS = 15


def signal_group(proc: subprocess.Popen, signum: int) -> None:
    """Signal ``proc``'s process group (its pid: it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


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
            "5",
        ]
        web_env = {**os.environ, "WEB_THREADS": str(web_threads)}
        children = [("web", subprocess.Popen(web, env=web_env, start_new_session=True))]
        if not no_worker:
            manage = os.path.join(os.getcwd(), "manage.py")
            children.append(
                (
                    "worker",
                    subprocess.Popen([sys.executable, manage, "qcluster"], start_new_session=True),
                )
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Serving on http://{host}:{port}/ (admin at /admin/, API docs at "
                f"/api/docs/, MCP at /mcp/); press Ctrl-C to stop."
            )
        )
        stopping = False

        def stop(*_):
            nonlocal stopping
            if stopping:
                return
            stopping = True
            for _name, proc in children:
                signal_group(proc, signal.SIGTERM)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(proc.poll() is None for _n, proc in children):
                time.sleep(0.5)
        finally:
            interrupted = stopping
            exited = [name for name, proc in children if proc.poll() is not None]
            stop()
            deadline = time.monotonic() + GRACE_SECONDS
            for _name, proc in children:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            # Workers that outlived their parent (or a parent that ignored SIGTERM).
            for _name, proc in children:
                signal_group(proc, signal.SIGKILL)
                proc.wait()
        if exited and not interrupted:
            self.stderr.write(f"{', '.join(exited)} exited; stopped the rest.")
        self.stdout.write("Stopped.")
