"""What restarts what under ``manage.py serve`` (``make run``): a supervisord configuration.

``serve`` writes ``var/supervisor/serve-<port>.conf`` and runs supervisord (the ``supervisor``
package, pinned in ``requirements.txt``) in the foreground with it:

- ``web``: the gunicorn master serving ``synthorg.asgi`` on uvicorn workers. A dead web
  *worker* is replaced by gunicorn's own arbiter; a dead *master* by supervisord.
- ``worker``: ``manage.py serve_qcluster`` (q2's ``qcluster``, exiting as soon as it has
  stopped). A dead q2 worker, monitor or pusher is replaced by q2's
  own sentinel; a dead ``qcluster`` process by supervisord.
- ``recovery``: the event listener in this module (:func:`listen`; it exits as supervisord
  starts stopping). On every process-state change of a program (and every 5 s) it kills
  what a dead program process left behind
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

Stopping (Ctrl-C, ``SIGTERM`` to ``serve``: ``serve`` signals supervisord and wakes it at once,
:func:`wake`) stops every program at once (they are one
supervisord group, :data:`GROUP`; separate groups are stopped one after the other) and each
gets :data:`STOP_GRACE_SECONDS` to stop by itself before supervisord kills its whole process
group (``SIGKILL``) — also when the database stopped answering and q2 cannot stop its own
workers:

- ``web``: ``SIGTERM`` to the gunicorn master and its workers; gunicorn drains the requests
  in flight for its ``--graceful-timeout``, the same grace.
- ``worker``/``worker-llm``: ``SIGTERM`` to the ``qcluster`` process alone
  (:attr:`Program.signal_leader_only`). It tells its sentinel to stop: no new task is taken,
  idle workers exit, results are saved. Signalling the whole group instead kills the
  sentinel outright (q2 leaves ``SIGTERM`` at its default there) while it waits on a shared
  event, and ``qcluster`` then blocks on that event until ``SIGKILL`` — every stop took the
  whole grace, one cluster after the other (measured:
  docs/benchmarks/operations.md#stopping-make-run). A task still running
  when the grace ends is killed with its worker and is not lost: the next cluster on its
  queue releases the broker rows held from before its start once it finds no other cluster
  there (:mod:`synthorg.cluster_presence`; by q2's own rule they wait ``Q_RETRY``), and a
  durable job (lesson capture, evolver draft) is claimable again when its lease ends
  (:mod:`synthorg.jobs`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

STOP_GRACE_SECONDS = 2
START_SECONDS = 10
START_RETRIES = 10
LISTENER = "recovery"
GROUP = "serve"


@dataclass(frozen=True)
class Program:
    """A supervised program: its ``argv`` and how it is asked to stop."""

    argv: list[str]
    #: ``SIGTERM`` to the program's own process only (it stops its children itself); by
    #: default to its whole process group. ``SIGKILL`` after the grace is always to the group.
    signal_leader_only: bool = False


def _quote(argv: list[str]) -> str:
    # supervisord splits ``command`` with shlex and expands ``%(…)s`` (ConfigParser).
    return shlex.join(argv).replace("%", "%%")


def render_config(*, programs: dict[str, Program], directory: Path, pidfile: Path) -> str:
    """The supervisord configuration for ``programs`` (by name), one group stopped at once,
    logging to serve's tty."""
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
    for name, program in programs.items():
        lines += [
            f"[program:{name}]",
            f"command={_quote(program.argv)}",
            f"directory={directory_value}",
            "autostart=true",
            "autorestart=true",
            f"startsecs={START_SECONDS}",
            f"startretries={START_RETRIES}",
            "stopsignal=TERM",
            # one second more than the programs' own grace (gunicorn's graceful timeout)
            f"stopwaitsecs={STOP_GRACE_SECONDS + 1}",
            f"stopasgroup={'false' if program.signal_leader_only else 'true'}",
            "killasgroup=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
            "stderr_logfile=/dev/stderr",
            "stderr_logfile_maxbytes=0",
            "",
        ]
    lines += [f"[group:{GROUP}]", f"programs={','.join(programs)}", ""]
    lines += [
        f"[eventlistener:{LISTENER}]",
        f"command={_quote([sys.executable, '-m', 'synthorg.supervision'])}",
        f"directory={directory_value}",
        "events=PROCESS_STATE,TICK_5,SUPERVISOR_STATE_CHANGE_STOPPING",
        "autorestart=true",
        "stderr_logfile=/dev/stderr",
        "stderr_logfile_maxbytes=0",
        "",
    ]
    return "\n".join(lines)


def write_config(*, var_dir: Path, name: str, programs: dict[str, Program]) -> Path:
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


def exit_now(code: int) -> None:
    """End a stopped Django process at once: run its exit handlers (:mod:`atexit`: the
    embedded PostgreSQL handle is dropped — the last process out stops the server with
    ``pg_ctl stop -m fast`` — and the log is flushed), then ``os._exit``, skipping the
    interpreter's teardown (a final garbage collection over Django and the app: 1–2 s on a
    shared 2-core machine, more under load). For ``serve`` and ``serve_qcluster`` once every
    process they started has ended."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


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


#: Sent by ``serve`` to the listener right after its ``SIGTERM`` to supervisord (:func:`wake`).
WAKE_SIGNAL = signal.SIGUSR1


def _woken(_signum, _frame) -> None:
    # os.write, not print: the handler may interrupt a print to stderr (a reentrant call).
    os.write(2, b"synthorg.supervision: stop requested\n")


def listener_of(supervisord: psutil.Process) -> psutil.Process | None:
    """supervisord's recovery listener process (None: not running)."""
    for child in supervisord.children():
        try:
            if child.environ().get("SUPERVISOR_PROCESS_NAME") == LISTENER:
                return child
        except psutil.Error:
            continue
    return None


def wake(supervisord: psutil.Process, listener: psutil.Process | None = None) -> bool:
    """Make supervisord act on a signal it was just sent, now instead of within a second.

    supervisord's loop waits up to 1 s in ``poll`` on its programs' output pipes and only
    then handles the signals it received (a stop: every program signalled at once). The
    listener, sent :data:`WAKE_SIGNAL`, writes a line to its stderr — one of those pipes — so
    the wait ends at once. Pass ``listener`` found (:func:`listener_of`) *before* the signal
    to supervisord: once supervisord acts on the signal, the listener exits. True when the
    listener was found and signalled.
    """
    listener = listener or listener_of(supervisord)
    if listener is None:
        return False
    try:
        listener.send_signal(WAKE_SIGNAL)
    except psutil.Error:
        return False
    return True


def listen() -> None:
    """supervisord event listener (speaks the protocol on stdin/stdout, logs to stderr)."""
    from supervisor import childutils

    signal.signal(WAKE_SIGNAL, _woken)
    supervisord = psutil.Process(os.getppid())
    marker = os.environ[MARKER_ENV]
    while True:
        headers, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        if headers["eventname"] == "SUPERVISOR_STATE_CHANGE_STOPPING":
            # Everything stops (each program's group is killed after its grace): nothing is
            # left to clean up after, and a listener that has already exited spares the
            # stop its own turn after the programs' (a group at a time, a second or so).
            childutils.listener.ok(sys.stdout)
            return
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
