"""Recovery under load: kill -9 of q2, a web worker, the gunicorn master and the postmaster.

    .venv/bin/python bench/recovery.py                       # JSON in bench/results/recovery.json
    .venv/bin/python bench/recovery.py --faults postmaster --clients 2
    .venv/bin/python bench/recovery.py --faults llm_qcluster,stranded_capture --burn 2

Everything runs against a **throw-away embedded PostgreSQL** in a temporary directory
(``SYNTHORG_PGDATA``), so neither the user's data nor the user's own server is touched (the
postmaster of that temporary server is the one killed). The benchmark migrates it,
declares the schedules (as ``make run`` does), creates a company with ``--clients`` agents
and API keys, and starts ``manage.py serve`` (supervisord,
2 web workers, the q2 cluster). ``--clients`` threads then store memories over HTTP
(``POST /api/v1/memories``, one new connection per request, at most ``--rate`` writes/s per
client, bounded by ``--max-minutes`` overall) and record the id of every acknowledged
(``201``) write; ``--mcp-clients`` more do the same through the MCP server (``POST /mcp/``,
``tools/call store_memory``). After ``--steady`` seconds of load, each fault in turn:

- ``qcluster``: kill -9 of the ``manage.py qcluster`` process; a task queued once the dead
  cluster's processes are gone must run (``queued_task_ran_s``, from the kill);
- ``qcluster_holding``: kill -9 of the default cluster while one of its workers holds a plain
  q2 task (``time.sleep(5)``, taken: its broker row locked for ``Q_RETRY``); the restarted
  cluster must run it (``held_task_ran_s``, from the kill): its presence lock tells it the
  holder is gone and it releases the row (:mod:`synthorg.cluster_presence`) — by q2's own
  rule the task would wait ``Q_RETRY`` (900 s);
- ``llm_qcluster``: kill -9 of the LLM cluster while it holds a durable job: a lesson
  capture is claimed just before the kill exactly as that cluster's worker claims it
  (``job_claim``, the 20 s job lease, whose keeper dies with the cluster), and must be run
  to its end by the restarted cluster — its lease passes, the kernel's next wake (every
  30 s) reclaims and dispatches it (``held_job_completed_s``, from the kill; target ≤ 60 s);
- ``stranded_capture`` (no kill): a report is stored whose capture task vanished (stored
  ``queued``, its q2 task never sent, as when the broker write failed or the cluster died
  before taking it); the service must run it on its own — after the lost-task grace, at the
  next wake (``stranded_capture_completed_s``, from the store; target ≤ 120 s);
- ``web_worker``: kill -9 of one uvicorn worker;
- ``gunicorn_master``: kill -9 of the gunicorn master;
- ``postmaster``: kill -9 of the embedded PostgreSQL postmaster.

Per fault it reports when a replacement process existed (``process_replaced_s``), when the
service served writes again (``served_again_s``: from the kill to the end of the first
acknowledged write that started after the last failed one; target ≤ 30 s) and the errors
clients saw meanwhile. At the end every acknowledged id is looked up in the database:
``writes.lost`` must be 0. Nothing is restarted by the benchmark: only by the service.

``--burn N`` starts N CPU burners (busy loops) once the service is up, to time recovery on a
loaded machine; the load average is recorded at each fault and at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.serve_process import free_port, stop_serve, throwaway_database  # noqa: E402

# Before Django builds its settings: this process and serve use the throw-away server.
WORK, PGDATA = throwaway_database("synthorg-recovery-")

import django  # noqa: E402
import psutil  # noqa: E402

FAULTS = (
    "qcluster",
    "qcluster_holding",
    "llm_qcluster",
    "stranded_capture",
    "web_worker",
    "gunicorn_master",
    "postmaster",
)
TARGET_S = 30.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Attempt:
    start: float
    end: float
    ok: bool
    kind: str  # "201" or the status / exception class


@dataclass
class Load:
    port: int
    keys: list[str]
    rate: float
    deadline: float
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    attempts: list[Attempt] = field(default_factory=list)
    acked: list[str] = field(default_factory=list)

    def client(self, index: int, *, mcp: bool = False) -> None:
        """Store memories as agent ``index``: over REST, or with ``mcp`` through the MCP
        server's ``store_memory`` tool (its errors are counted as ``mcp <HTTP status>`` or
        ``mcp tool <problem status>``)."""
        key = self.keys[index]
        n = 0
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            n += 1
            memory = {
                "content": f"recovery write {index}-{n} {uuid.uuid4().hex}",
                "category": "semantic",
            }
            start = time.monotonic()
            ok, kind, memory_id = False, "", None
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
                if mcp:
                    body = {
                        "jsonrpc": "2.0",
                        "id": n,
                        "method": "tools/call",
                        "params": {"name": "store_memory", "arguments": memory},
                    }
                    headers["Accept"] = "application/json, text/event-stream"
                    conn.request("POST", "/mcp/", body=json.dumps(body), headers=headers)
                else:
                    conn.request(
                        "POST", "/api/v1/memories", body=json.dumps(memory), headers=headers
                    )
                response = conn.getresponse()
                payload = response.read()
                conn.close()
                kind = ("mcp " if mcp else "") + str(response.status)
                if mcp and response.status == 200:
                    result = json.loads(payload).get("result") or {}
                    data = result.get("structuredContent") or {}
                    if result.get("isError"):
                        kind = f"mcp tool {data.get('status')}"
                    else:
                        memory_id, ok = data["id"], True
                elif response.status == 201:
                    memory_id = json.loads(payload)["id"]
                    ok = True
            except (OSError, http.client.HTTPException) as exc:
                kind = type(exc).__name__
            end = time.monotonic()
            with self.lock:
                self.attempts.append(Attempt(start, end, ok, kind))
                if memory_id:
                    self.acked.append(memory_id)
            time.sleep(max(0.0, 1 / self.rate - (end - start)))

    def window(self, since: float) -> list[Attempt]:
        with self.lock:
            return [a for a in self.attempts if a.start >= since]


def healthz(port: int) -> int | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


def poll(condition, timeout: float, interval: float = 0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    return None


def cmdline(proc: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(proc.cmdline())
    return ""


def program_leader(serve_pid: int, marker: str, *, llm: bool = False) -> psutil.Process | None:
    """The process supervisord started for a program (its parent is supervisord). For
    ``qcluster``: the default cluster's, or with ``llm`` the LLM cluster's (the same command
    line with ``Q_CLUSTER_NAME=llm`` in its environment)."""
    with contextlib.suppress(psutil.Error):
        for proc in psutil.Process(serve_pid).children(recursive=True):
            if marker in cmdline(proc) and "supervisor.supervisord" in cmdline(proc.parent()):
                if marker == "qcluster" and bool(proc.environ().get("Q_CLUSTER_NAME")) != llm:
                    continue
                return proc
    return None


def target_pid(fault: str, serve_pid: int) -> int:
    from synthorg.embedded_pg import read_postmaster

    if fault in ("qcluster", "qcluster_holding", "llm_qcluster"):
        return program_leader(serve_pid, "qcluster", llm=fault == "llm_qcluster").pid
    if fault == "gunicorn_master":
        return program_leader(serve_pid, "gunicorn").pid
    if fault == "web_worker":
        return program_leader(serve_pid, "gunicorn").children()[0].pid
    return read_postmaster(PGDATA).pid


def worker_pids(serve_pid: int) -> set[int]:
    master = program_leader(serve_pid, "gunicorn")
    with contextlib.suppress(psutil.Error):
        return {c.pid for c in master.children()} if master else set()
    return set()


def replacement_pid(fault: str, serve_pid: int, old: int, before: set[int]) -> int | None:
    from synthorg.embedded_pg import read_postmaster

    if fault == "postmaster":
        info = read_postmaster(PGDATA)
        return info.pid if info and info.status == "ready" and info.pid != old else None
    if fault == "web_worker":
        return next(iter(worker_pids(serve_pid) - before), None)
    if fault in ("qcluster", "qcluster_holding", "llm_qcluster"):
        leader = program_leader(serve_pid, "qcluster", llm=fault == "llm_qcluster")
    else:
        leader = program_leader(serve_pid, "gunicorn")
    return leader.pid if leader and leader.pid != old else None


def held_task() -> str:
    """Queue a plain q2 task (``time.sleep(5)``) and wait until a worker of the default
    cluster has taken it (its broker row locked for ``Q_RETRY``); returns its group."""
    from django.conf import settings
    from django.utils import timezone
    from django_q.models import OrmQ
    from django_q.tasks import async_task

    retry = settings.Q_CLUSTER["retry"]
    group = f"recovery-held-{uuid.uuid4().hex}"
    queued_at = timezone.now()
    async_task("time.sleep", 5, group=group)
    taken = poll(
        lambda: OrmQ.objects.filter(
            key=settings.Q_CLUSTER["name"], lock__gt=queued_at + timedelta(seconds=retry - 1)
        ).exists(),
        30,
        0.05,
    )
    if not taken:
        raise SystemExit("qcluster_holding: no worker took the task within 30 s")
    return group


def stranded_capture() -> str:
    """A report stored with its capture ``queued`` whose q2 task was never sent (the task
    vanished): nothing but the service's own dispatch can run it. Its report id."""
    from memory.procedural.services.reports import execution_report_submit
    from persistence.models import Agent

    submitted = execution_report_submit(
        agent=Agent.objects.filter(company__slug="recovery").order_by("pk").first(),
        data={"task_title": "Recovery probe", "outcome": "failed", "retry_count": 2},
        enqueue=False,
    )
    return str(submitted.report.pk)


def held_capture() -> str:
    """A lesson capture claimed as the LLM cluster's worker claims it (``job_claim``: status
    ``running`` under the job lease); the worker is about to be killed. Its report id."""
    from memory.procedural.services.capture import CAPTURE_JOB
    from synthorg.jobs.services import job_claim

    report_id = stranded_capture()
    if job_claim(CAPTURE_JOB, report_id) is None:
        raise SystemExit(f"the probe's capture {report_id} is not claimable")
    return report_id


def capture_ran(report_id: str) -> bool:
    from memory.procedural.models import ExecutionCapture

    status = ExecutionCapture.objects.values_list("status", flat=True).get(report_id=report_id)
    return status not in ("queued", "running", "failed")


def served_again(load: Load, t0: float) -> float | None:
    """Seconds from the kill to the end of the first acknowledged write started after the
    last failed one (None while no such write exists)."""
    attempts = load.window(t0)
    failures = [a.start for a in attempts if not a.ok]
    after = max(failures, default=t0)
    oks = [a.end for a in attempts if a.ok and a.start >= after]
    return min(oks) - t0 if oks else None


def run_stranded(window: float) -> dict:
    """The ``stranded_capture`` fault: a capture whose task vanished, run by the service."""
    load_average = round(os.getloadavg()[0], 2)
    t0 = time.monotonic()
    report_id = stranded_capture()
    log(f"stranded_capture: report {report_id} stored, its task never sent")
    ran = poll(lambda: capture_ran(report_id), max(window, 240), 0.5)
    result = {
        "fault": "stranded_capture",
        "load_average_1m_at_fault": load_average,
        "stranded_capture_completed_s": round(time.monotonic() - t0, 2) if ran else None,
    }
    log(f"stranded_capture: {result}")
    return result


def run_fault(fault: str, load: Load, serve_pid: int, port: int, window: float) -> dict:
    from django_q.models import Task
    from django_q.tasks import async_task

    if fault == "stranded_capture":
        return run_stranded(window)
    load_average = round(os.getloadavg()[0], 2)
    held = held_capture() if fault == "llm_qcluster" else None
    held_group = held_task() if fault == "qcluster_holding" else None
    old = target_pid(fault, serve_pid)
    before = worker_pids(serve_pid)
    log(f"{fault}: kill -9 {old}")
    with contextlib.suppress(psutil.Error):
        old_tree = [psutil.Process(old), *psutil.Process(old).children(recursive=True)]
    t0 = time.monotonic()
    os.kill(old, signal.SIGKILL)
    new = poll(lambda: replacement_pid(fault, serve_pid, old, before), window)
    replaced = time.monotonic() - t0 if new else None
    group = None
    if fault == "qcluster":
        # Probe the new cluster once the dead one's sentinel and workers are gone: a task
        # the dead cluster had already taken is redelivered only after Q_RETRY seconds.
        psutil.wait_procs(old_tree, timeout=window)
        group = f"recovery-{uuid.uuid4().hex}"
        async_task("math.floor", 1.5, group=group)
    task_ran = None
    if group and poll(
        lambda: Task.objects.filter(group=group, success=True).exists(), window, 0.25
    ):
        task_ran = time.monotonic() - t0
    held_ran = None
    if held and poll(lambda: capture_ran(held), max(window, 180), 0.5):
        held_ran = time.monotonic() - t0
    held_task_ran = None
    if held_group and poll(
        lambda: Task.objects.filter(group=held_group, success=True).exists(), window, 0.25
    ):
        held_task_ran = time.monotonic() - t0

    # Served again once an acknowledged write follows the last failure and 3 s pass quietly.
    def settled():
        again = served_again(load, t0)
        return (
            again is not None
            and time.monotonic() - t0 - again >= 3
            and not any(not a.ok for a in load.window(t0 + again))
        )

    poll(settled, window, 0.25)
    again = served_again(load, t0)
    attempts = load.window(t0)
    outage_end = t0 + (again if again is not None else window)
    during = [a for a in attempts if a.start <= outage_end]
    errors = Counter(a.kind for a in during if not a.ok)
    result = {
        "fault": fault,
        "load_average_1m_at_fault": load_average,
        "killed_pid": old,
        "replacement_pid": new,
        "process_replaced_s": round(replaced, 2) if replaced is not None else None,
        "served_again_s": round(again, 2) if again is not None else None,
        "within_target": again is not None and again <= TARGET_S,
        "client_errors": sum(errors.values()),
        "client_error_kinds": dict(sorted(errors.items())),
        "writes_acknowledged_during_outage": sum(1 for a in during if a.ok),
    }
    if fault == "qcluster":
        result["queued_task_ran_s"] = round(task_ran, 2) if task_ran is not None else None
    if fault == "qcluster_holding":
        result["held_task_ran_s"] = round(held_task_ran, 2) if held_task_ran is not None else None
    if fault == "llm_qcluster":
        result["held_job_completed_s"] = round(held_ran, 2) if held_ran is not None else None
    log(f"{fault}: {result}")
    return result


def burn() -> None:
    """A CPU burner (``--burn``): a busy loop until it is terminated."""
    while True:
        pass


def seed(clients: int) -> list[str]:
    from persistence.models import Company
    from persistence.services.agents import agent_create, api_key_issue

    company = Company.objects.create(name="Recovery", slug="recovery")
    return [
        api_key_issue(
            agent=agent_create(company=company, name=f"agent-{i}", memory_level="persistent")
        ).raw_key
        for i in range(clients)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--mcp-clients", type=int, default=0, help="more agents storing through the MCP server"
    )
    parser.add_argument("--rate", type=float, default=5.0, help="writes/s per client (at most)")
    parser.add_argument("--steady", type=float, default=8.0, help="seconds of load before a kill")
    parser.add_argument("--window", type=float, default=90.0, help="seconds to wait per fault")
    parser.add_argument("--max-minutes", type=float, default=15.0)
    parser.add_argument(
        "--burn", type=int, default=0, help="CPU burners to run meanwhile (a loaded machine)"
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "recovery.json"))
    args = parser.parse_args()
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise SystemExit(f"unknown faults {sorted(unknown)}; choose from {', '.join(FAULTS)}")
    env = dict(os.environ)
    serve = None
    burners: list[multiprocessing.Process] = []
    serve_log = open(WORK / "serve.log", "w")  # noqa: SIM115 (closed in finally)
    try:
        log(f"throw-away embedded server in {PGDATA}: migrating …")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        # as `make run` does: the every-minute schedules (a held job's reclaim is one)
        subprocess.run(
            [sys.executable, "manage.py", "sync_schedules"], cwd=ROOT, env=env, check=True
        )
        django.setup()
        from django.db import connections

        from memory.core.models import Memory

        keys = seed(args.clients + args.mcp_clients)
        with free_port() as port:
            pass
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--web-workers", "2"],
            cwd=ROOT,
            env=env,
            stdout=serve_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if not poll(lambda: serve.poll() is None and healthz(port) == 200, 300, 0.5):
            raise SystemExit(f"serve did not become healthy; see {WORK / 'serve.log'}")
        log(f"serving on {port}; load: {args.clients} clients × ≤ {args.rate} writes/s")
        load = Load(
            port=port, keys=keys, rate=args.rate, deadline=time.monotonic() + args.max_minutes * 60
        )
        threads = [
            threading.Thread(
                target=load.client, args=(i,), kwargs={"mcp": i >= args.clients}, daemon=True
            )
            for i in range(args.clients + args.mcp_clients)
        ]
        for thread in threads:
            thread.start()
        load_before_burn = [round(x, 2) for x in os.getloadavg()]
        for _ in range(args.burn):
            burner = multiprocessing.Process(target=burn, daemon=True)
            burner.start()
            burners.append(burner)
        results = []
        for fault in faults:
            time.sleep(args.steady)
            results.append(run_fault(fault, load, serve.pid, port, args.window))
        time.sleep(args.steady)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=60)
        acked = list(load.acked)
        # This process's own connection died with the postmaster: open a new one.
        connections.close_all()
        present = set()
        for i in range(0, len(acked), 1000):
            present.update(
                str(pk)
                for pk in Memory.objects.filter(id__in=acked[i : i + 1000]).values_list(
                    "id", flat=True
                )
            )
        lost = [memory_id for memory_id in acked if memory_id not in present]
        out = {
            "command": " ".join(["bench/recovery.py", *sys.argv[1:]]),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpu_count": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "load_average_before_burners": load_before_burn,
                "burners": args.burn,
                "python": platform.python_version(),
            },
            "config": {
                "clients": args.clients,
                "mcp_clients": args.mcp_clients,
                "rate_per_client": args.rate,
                "steady_s": args.steady,
                "web_workers": 2,
                "database": "throw-away embedded PostgreSQL (SYNTHORG_PGDATA)",
            },
            "target_served_again_s": TARGET_S,
            "faults": results,
            "writes": {
                "attempted": len(load.attempts),
                "acknowledged": len(acked),
                "verified_present": len(acked) - len(lost),
                "lost": len(lost),
                "lost_ids": lost[:20],
                "unacknowledged": sum(1 for a in load.attempts if not a.ok),
            },
        }
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
        log(json.dumps(out["writes"]))
        log(f"wrote {args.out}")
    finally:
        for burner in burners:
            burner.terminate()
        stop_serve(serve, log=serve_log, pgdata=PGDATA, work=WORK)


if __name__ == "__main__":
    main()
