"""The ``manage.py serve`` process of a benchmark run from outside: a free port for it, and
the teardown after it (the server's process group, the throw-away embedded PostgreSQL, the
work directory).

Used by ``bench/llm_faults.py`` and ``bench/recovery.py``, which start the real server in
its own process group on a throw-away data directory::

    with free_port() as port:
        ...
    try:
        serve = subprocess.Popen([...], start_new_session=True)
        ...
    finally:
        stop_serve(serve, log=serve_log, pgdata=PGDATA, work=WORK)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def throwaway_database(prefix: str) -> tuple[Path, Path]:
    """A new work directory and the embedded PostgreSQL data directory inside it, set as
    ``SYNTHORG_PGDATA`` (and any other database setting dropped) so that this process and
    the ``serve`` it starts use a throw-away server. Call it before Django builds its
    settings."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    pgdata = work / "pgdata"
    os.environ["SYNTHORG_PGDATA"] = str(pgdata)
    for name in ("DATABASE_URL", "DATABASE_OWNER_URL", "SYNTHORG_TEST_DATABASE"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")
    return work, pgdata


#: Seconds the server gets to stop after SIGINT before its group is killed.
STOP_GRACE_S = 120


@contextlib.contextmanager
def free_port() -> Iterator[int]:
    """A port free on 127.0.0.1 (bound for the block, so nothing else takes it meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def stop_serve(
    serve: subprocess.Popen | None, *, log: IO, pgdata: Path | str, work: Path | str
) -> None:
    """The teardown after ``serve``: :func:`stop_process_group`, close its ``log``, then
    :func:`remove_throwaway_database`. Safe after a failed start (``serve`` ``None`` or
    ended)."""
    stop_process_group(serve)
    log.close()
    remove_throwaway_database(pgdata=pgdata, work=work)


def stop_process_group(serve: subprocess.Popen | None) -> None:
    """SIGINT to ``serve``'s process group (it was started with ``start_new_session``), then
    SIGKILL when it has not ended after :data:`STOP_GRACE_S`."""
    if serve is not None and serve.poll() is None:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()


def remove_throwaway_database(*, pgdata: Path | str, work: Path | str) -> None:
    """Close this process's connections, detach it from the embedded PostgreSQL on
    ``pgdata`` and stop that server, then remove ``work`` (the data directory's parent)."""
    from django.db import connections

    from synthorg.database import current_embedded_server
    from synthorg.embedded_pg import EmbeddedServer

    connections.close_all()
    server = current_embedded_server()
    if server is not None:  # its atexit detach would write beside the removed directory
        with contextlib.suppress(Exception):
            server.detach()
    with contextlib.suppress(Exception):
        EmbeddedServer(pgdata).stop()
    shutil.rmtree(work, ignore_errors=True)
