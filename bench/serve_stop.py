"""How long ``manage.py serve`` (``make run``) takes to stop on Ctrl-C.

    .venv/bin/python bench/serve_stop.py                   # JSON in bench/results/serve_stop.json
    .venv/bin/python bench/serve_stop.py --runs 3 --in-flight --out /tmp/stop.json

Against a **throw-away embedded PostgreSQL** (``SYNTHORG_PGDATA`` in a temporary directory,
migrated once). Each run starts ``manage.py serve`` on a free port in a process group of its
own (as a terminal's foreground job), waits until ``/healthz`` answers 200 with both q2
clusters' heartbeats fresh, then sends ``SIGINT`` to the group — what Ctrl-C does — and
times:

- ``exit_s``: from the signal until ``serve`` exited;
- ``processes_gone_s``: until every process that ran under ``serve`` was gone.

``--in-flight`` first queues one task on each cluster that sleeps ``--task-seconds`` and
waits until both are taken, so the stop meets busy workers; the run then reports how many
of the two the broker still holds afterwards (``queued_after_stop``: a task a stop cut
short is not lost, it is delivered again). supervisord's lines on how each program ended
(``exit status`` or ``terminated by SIGKILL``) are kept per run. The benchmark process
itself never opens a database connection while ``serve`` runs, so the stop includes what
``make run``'s does: the last process detaching from the embedded server stops it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.serve_process import (  # noqa: E402
    free_port,
    remove_throwaway_database,
    stop_process_group,
    throwaway_database,
)

WORK, PGDATA = throwaway_database("synthorg-serve-stop-")

import psutil  # noqa: E402

TARGET_S = 5.0
CLUSTERS = ("q2_cluster", "q2_llm_cluster")
STOPPED_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?:INFO|WARN|CRIT) stopped: (\S+) \((.+)\)$",
    re.MULTILINE,
)

QUEUE_SLEEPERS = """
import time
from django.utils import timezone
from django_q.models import OrmQ
from django_q.tasks import async_task
async_task("time.sleep", {seconds}, task_name="stop-probe-default")
async_task("time.sleep", {seconds}, task_name="stop-probe-llm", cluster="llm")
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    if OrmQ.objects.filter(lock__gt=timezone.now()).count() == 2:
        break
    time.sleep(0.2)
print(OrmQ.objects.filter(lock__gt=timezone.now()).count())
"""

COUNT_QUEUED = """
from django_q.models import OrmQ
print(OrmQ.objects.count())
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def healthz(port: int) -> dict | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        body = response.read()
        conn.close()
    except OSError:
        return None
    if response.status != 200:
        return None
    return json.loads(body)


def clusters_up(port: int) -> bool:
    health = healthz(port)
    return bool(health) and all(health["checks"].get(name, {}).get("ok") for name in CLUSTERS)


def manage_shell(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def _epoch(stamp: str) -> float:
    """supervisord's local-time log stamp (``2026-12-02 11:40:11,999``) as epoch seconds."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def one_run(
    index: int,
    *,
    in_flight: bool,
    task_seconds: int,
    start_timeout: float,
    keep_logs: Path | None = None,
) -> dict:
    with free_port() as port:
        pass
    log_path = WORK / f"serve-{index}.log"
    with open(log_path, "w") as serve_log:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=ROOT,
            stdout=serve_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + start_timeout
            while not clusters_up(port):
                if serve.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"serve did not come up; see {log_path}")
                time.sleep(0.5)
            taken = None
            if in_flight:
                taken = int(manage_shell(QUEUE_SLEEPERS.format(seconds=task_seconds)))
                time.sleep(1)  # from the pusher's claim into a worker
            started = [psutil.Process(serve.pid), *psutil.Process(serve.pid).children(True)]
            t0, wall0 = time.monotonic(), time.time()
            os.killpg(serve.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
            serve.wait(timeout=300)
            exit_s = time.monotonic() - t0
            _gone, alive = psutil.wait_procs(started, timeout=60)
            gone_s = time.monotonic() - t0
        finally:
            stop_process_group(serve)
    text = log_path.read_text(errors="replace")
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        (keep_logs / log_path.name).write_text(f"# SIGINT at {wall0:.3f}\n{text}")
    result = {
        "run": index,
        "exit_s": round(exit_s, 2),
        "processes_gone_s": round(gone_s, 2),
        "processes": len(started),
        "left_running": len(alive),
        "returncode": serve.returncode,
        "programs_stopped": {
            name: {"how": how, "after_s": round(_epoch(stamp) - wall0, 2)}
            for stamp, name, how in STOPPED_LINE.findall(text)
        },
    }
    if in_flight:
        result["tasks_taken_before_stop"] = taken
        result["queued_after_stop"] = int(manage_shell(COUNT_QUEUED))
        manage_shell("from django_q.models import OrmQ; OrmQ.objects.all().delete()")
    log(f"run {index}: {result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--in-flight", action="store_true", help="stop with busy workers")
    parser.add_argument("--task-seconds", type=int, default=120)
    parser.add_argument("--start-timeout", type=float, default=300)
    parser.add_argument(
        "--keep-logs", type=Path, help="copy each run's serve log (SIGINT time first) here"
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "serve_stop.json"))
    args = parser.parse_args()
    try:
        log(f"throw-away embedded server in {PGDATA}: migrating …")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, check=True
        )
        runs = [
            one_run(
                i,
                in_flight=args.in_flight,
                task_seconds=args.task_seconds,
                start_timeout=args.start_timeout,
                keep_logs=args.keep_logs,
            )
            for i in range(1, args.runs + 1)
        ]
        exits = [r["exit_s"] for r in runs]
        out = {
            "command": " ".join(["bench/serve_stop.py", *sys.argv[1:]]),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpu_count": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "python": platform.python_version(),
            },
            "config": {
                "in_flight": args.in_flight,
                "task_seconds": args.task_seconds if args.in_flight else None,
                "web_workers": int(os.environ.get("WEB_WORKERS", "2")),
                "database": "throw-away embedded PostgreSQL (SYNTHORG_PGDATA)",
            },
            "target_exit_s": TARGET_S,
            "exit_s": {"median": statistics.median(exits), "max": max(exits)},
            "within_target": max(exits) <= TARGET_S,
            "runs": runs,
        }
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
        log(json.dumps(out["exit_s"]))
        log(f"wrote {args.out}")
    finally:
        remove_throwaway_database(pgdata=PGDATA, work=WORK)


if __name__ == "__main__":
    main()
