"""What restarts what under ``manage.py serve`` (``make run``): a supervisord configuration.

``serve`` writes ``var/supervisor/serve-<port>.conf`` and runs supervisord (the ``supervisor``
package, pinned in ``requirements.txt``) in the foreground with it:

- ``web``: the gunicorn master serving ``synthorg.asgi`` on uvicorn workers. A dead web
  *worker* is replaced by gunicorn's own arbiter; a dead *master* by supervisord.
- ``worker``: ``manage.py qcluster``. A dead q2 worker, monitor or pusher is replaced by q2's
  own sentinel; a dead ``qcluster`` process by supervisord.
- ``recovery``: the event listener in this module (:func:`listen`). On every process-state
  change of a program (and every 5 s) it kills what a dead program process left behind
  (:func:`orphaned_groups`): a gunicorn master killed with ``kill -9`` leaves its uvicorn
  workers holding the port (they do not watch their parent), and a killed ``qcluster``
  leaves its sentinel and workers running as a second cluster. The events alone cannot
  name them: a process that dies while still starting is reported without its pid.
- The embedded PostgreSQL is not a program here: it is shared by every process of the
  checkout and restarted by the connection layer (``synthorg.db.embedded``) on the first
  connection after a crash.

Back-off: a program that exits within ``START_SECONDS`` of being started counts as a failed
start; supervisord waits 1 s, 2 s, … before the next (one second more each time) and after
``START_RETRIES`` failed starts in a row gives the program up (``FATAL``). The listener then
stops supervisord, so ``serve`` exits with an error instead of serving half the service
forever. A program that had been running longer is restarted at once and its count starts
again.

Stopping (Ctrl-C, ``SIGTERM`` to ``serve``) sends each program's whole process group
``SIGTERM`` and, after ``GRACE_SECONDS``, ``SIGKILL`` — also when the database stopped
answering and q2 cannot stop its own workers.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
from pathlib import Path

import psutil

GRACE_SECONDS = 15
START_SECONDS = 10
START_RETRIES = 10
LISTENER = "recovery"


def _quote(argv: list[str]) -> str:
    # supervisord splits ``command`` with shlex and expands ``%(…)s`` (ConfigParser).
    return shlex.join(argv).replace("%", "%%")


def render_config(*, programs: dict[str, list[str]], directory: Path, pidfile: Path) -> str:
    """The supervisord configuration for ``programs`` (name → argv), logging to serve's tty."""
    directory_value = str(directory).replace("%", "%%")
    lines = [
        "[supervisord]",
        "nodaemon=true",
        "logfile=/dev/null",
        "logfile_maxbytes=0",
        f"pidfile={str(pidfile).replace('%', '%%')}",
        "loglevel=info",
        "",
    ]
    for name, argv in programs.items():
        lines += [
            f"[program:{name}]",
            f"command={_quote(argv)}",
            f"directory={directory_value}",
            "autostart=true",
            "autorestart=true",
            f"startsecs={START_SECONDS}",
            f"startretries={START_RETRIES}",
            "stopsignal=TERM",
            f"stopwaitsecs={GRACE_SECONDS}",
            "stopasgroup=true",
            "killasgroup=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            "stderr_logfile=/dev/stderr",
            "stderr_logfile_maxbytes=0",
            "",
        ]
    lines += [
        f"[eventlistener:{LISTENER}]",
        f"command={_quote([sys.executable, '-m', 'synthorg.supervision'])}",
        f"directory={directory_value}",
        "events=PROCESS_STATE,TICK_5",
        "autorestart=true",
        "stderr_logfile=/dev/stderr",
        "stderr_logfile_maxbytes=0",
        "",
    ]
    return "\n".join(lines)


def write_config(*, var_dir: Path, name: str, programs: dict[str, list[str]]) -> Path:
    """Write ``var/supervisor/<name>.conf`` (replaced atomically) and return its path."""
    folder = var_dir / "supervisor"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.conf"
    text = render_config(
        programs=programs, directory=var_dir.parent, pidfile=folder / f"{name}.pid"
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


MARKER_ENV = "SYNTHORG_SUPERVISION_ID"


def orphaned_groups(supervisord: psutil.Process, marker: str) -> set[int]:
    """Process groups left behind by a program process that died.

    supervisord starts each program in a group of its own (the program's pid, in
    supervisord's session). A process of this supervision (``marker`` in its environment)
    in that session whose group is neither supervisord's nor a live program's belongs to a
    program process that exited. The embedded postmaster, even when a program started it,
    runs in a session of its own and is never one of them.
    """
    session = os.getsid(supervisord.pid)
    live = {child.pid for child in supervisord.children()} | {os.getpgid(supervisord.pid)}
    orphans = set()
    for proc in psutil.process_iter():
        try:
            if proc.pid in (os.getpid(), supervisord.pid) or os.getsid(proc.pid) != session:
                continue
            group = os.getpgid(proc.pid)
            if group in live or proc.environ().get(MARKER_ENV) != marker:
                continue
        except (psutil.Error, OSError):
            continue
        orphans.add(group)
    return orphans


def handle_event(
    event: str, fields: dict[str, str], *, supervisord: psutil.Process, marker: str
) -> list[str]:
    """Act on one event; returns what was done (for the log)."""
    done = []
    for group in sorted(orphaned_groups(supervisord, marker)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
            done.append(f"killed process group {group}, left behind by a program that died")
    if event == "PROCESS_STATE_FATAL" and fields.get("processname") != LISTENER:
        supervisord.terminate()
        done.append(
            f"{fields.get('processname')} could not be started ({START_RETRIES} attempts, "
            f"each exiting within {START_SECONDS} s); stopping everything"
        )
    return done


def listen() -> None:
    """supervisord event listener (speaks the protocol on stdin/stdout, logs to stderr)."""
    from supervisor import childutils

    supervisord = psutil.Process(os.getppid())
    marker = os.environ[MARKER_ENV]
    while True:
        headers, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        fields = {}
        if headers["eventname"].startswith("PROCESS_STATE"):
            fields, _data = childutils.eventdata(payload + "\n")
        for line in handle_event(
            headers["eventname"], fields, supervisord=supervisord, marker=marker
        ):
            print(f"synthorg.supervision: {line}", file=sys.stderr, flush=True)
        childutils.listener.ok(sys.stdout)


if __name__ == "__main__":
    listen()
