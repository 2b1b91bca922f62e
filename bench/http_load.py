"""HTTP throughput of the memory API under concurrent agents, for each serving model.

For each ``--variants`` entry the benchmark starts the real server (gunicorn, 2 workers by
default) as a subprocess against a throw-away database seeded with ``--agents`` agents of
``--seed`` memories each, then runs ``--clients`` concurrent clients for ``--duration``
seconds: 40 % ``POST /memories`` (new text each time), 30 % ``POST /memories/search``, 30 %
``POST /memories/context``, each client as one agent. It reports requests/s, p50/p95/p99
latency and errors (any non-2xx or transport failure) per variant and per request kind, the
CPU time the server processes and the PostgreSQL backends spent per request (which other
jobs on a shared machine change far less than wall-clock figures), and writes
``bench/results/http_load.json``.

Variants:
  sync         gunicorn sync workers, WSGI (the serving model before the MCP server)
  gthread      gunicorn threaded workers (``--threads``), WSGI
  asgi         gunicorn + uvicorn workers, ``synthorg.asgi:application``: MCP at /mcp/,
               Django's WSGI app in a pool of ``--threads`` threads (what ``make run`` serves)
  asgi-native  the same router over Django's own ASGI handler

    python bench/http_load.py --variants sync,gthread,asgi,asgi-native --duration 60
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

BENCH_DB = "bench_http_load"
_WORDS = (
    "billing deploy friday release freeze checkout incident staging database migration "
    "rollback latency customer invoice refund ledger audit policy review onboarding survey "
    "cache queue worker schedule backup restore alert pager oncall runbook metric budget"
)
WORDS = _WORDS.split()
TOPICS = ["deploys", "incidents", "customers", "budgets", "reviews", "migrations", "alerts"]


def server_command(variant: str, port: int, workers: int, threads: int) -> list[str]:
    gunicorn = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:synthorg.gunicorn_conf",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--graceful-timeout",
        "5",
        "--timeout",
        "120",
    ]
    if variant == "sync":
        return [*gunicorn, "synthorg.wsgi:application"]
    if variant == "gthread":
        return [*gunicorn, "--threads", str(threads), "synthorg.wsgi:application"]
    if variant == "asgi":
        return [*gunicorn, "-k", "uvicorn_worker.UvicornWorker", "synthorg.asgi:application"]
    if variant == "asgi-native":
        return [
            *gunicorn,
            "-k",
            "uvicorn_worker.UvicornWorker",
            "synthorg.asgi:native_application()",
        ]
    raise SystemExit(f"unknown variant {variant!r}")


def database_url() -> str:
    db = connection.settings_dict
    auth = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@"
    host = db["HOST"] or "127.0.0.1"
    if host.startswith("/"):
        return f"postgresql://{auth}:{db['PORT']}/{db['NAME']}?host={quote(host)}"
    return f"postgresql://{auth}{host}:{db['PORT']}/{db['NAME']}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sentence(rng: random.Random) -> str:
    return f"Note on {rng.choice(TOPICS)}: " + " ".join(rng.choices(WORDS, k=rng.randint(8, 16)))


def seed(agents: int, per_agent: int) -> list[str]:
    """A company with ``agents`` agents holding ``per_agent`` memories each; their keys."""
    from memory.domain import MemoryStoreRequest
    from memory.services.store import memory_store_batch
    from persistence.models import Company
    from persistence.selectors.identity import agent_for_api_key
    from persistence.services.agents import agent_create, api_key_issue

    rng = random.Random(7)
    company = Company.objects.create(name="HTTP load", slug="http-load")
    keys = []
    for index in range(agents):
        agent = agent_create(company=company, name=f"agent-{index}", memory_level="persistent")
        key = api_key_issue(agent=agent).raw_key
        agent_for_api_key(key)  # stamps last use now, not during the measurement
        keys.append(key)
        requests = [
            MemoryStoreRequest(content=sentence(rng), category="semantic") for _ in range(per_agent)
        ]
        memory_store_batch(agent=agent, requests=requests)
        print(f"  seeded agent {index + 1}/{agents}", file=sys.stderr, flush=True)
    return keys


def wait_ready(base: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code in (200, 503):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit("server did not become ready")


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pids) -> dict[int, float]:
    """User + system CPU seconds of each live pid (Linux /proc)."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime
    return out


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:  # field 5 of stat: the process group
                pids.append(int(entry.name))
    return pids


def backend_pids() -> list[int]:
    """The PostgreSQL backends serving the benchmark database (when the server is local)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        pids = [pid for (pid,) in cursor.fetchall()]
    connection.close()
    return pids


def cpu_snapshot(pgid: int) -> tuple[dict[int, float], dict[int, float]]:
    return process_cpu_seconds(group_pids(pgid)), process_cpu_seconds(backend_pids())


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    index = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return round(values[index], 1)


def run_load(base: str, keys: list[str], clients: int, duration: float, seed_value: int) -> dict:
    samples: list[tuple[str, float, bool]] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(index: int) -> None:
        rng = random.Random(seed_value * 1000 + index)
        headers = {"Authorization": f"Bearer {keys[index % len(keys)]}"}
        with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
            start_gate.wait()
            while time.monotonic() < stop_at[0]:
                roll = rng.random()
                if roll < 0.4:
                    kind, path = "store", "/api/v1/memories"
                    body = {"content": sentence(rng) + f" #{rng.random()}", "category": "semantic"}
                elif roll < 0.7:
                    kind, path = "search", "/api/v1/memories/search"
                    body = {"query": f"what happened with {rng.choice(TOPICS)}?", "limit": 10}
                else:
                    kind, path = "context", "/api/v1/memories/context"
                    body = {
                        "query": f"prepare the {rng.choice(TOPICS)} review",
                        "token_budget": 800,
                    }
                began = time.monotonic()
                try:
                    response = http.post(path, json=body)
                    ok = 200 <= response.status_code < 300
                    problem = None if ok else f"{kind} HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    ok, problem = False, f"{kind} {type(exc).__name__}"
                elapsed = (time.monotonic() - began) * 1000
                with lock:
                    samples.append((kind, elapsed, ok))
                    if problem:
                        errors[problem] = errors.get(problem, 0) + 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    stop_at[0] = began + duration
    start_gate.wait()
    progress_every = max(5.0, duration / 6)
    next_report = began + progress_every
    while any(thread.is_alive() for thread in threads):
        time.sleep(0.5)
        if time.monotonic() >= next_report:
            with lock:
                done = len(samples)
            print(
                f"    {time.monotonic() - began:5.0f}s: {done} requests",
                file=sys.stderr,
                flush=True,
            )
            next_report += progress_every
    wall = time.monotonic() - began

    def stats(rows):
        latencies = [ms for _k, ms, _ok in rows]
        return {
            "requests": len(rows),
            "errors": sum(1 for _k, _ms, ok in rows if not ok),
            "p50_ms": percentile(latencies, 0.50),
            "p95_ms": percentile(latencies, 0.95),
            "p99_ms": percentile(latencies, 0.99),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
        }

    overall = stats(samples)
    overall["req_per_s"] = round(len(samples) / wall, 2)
    overall["wall_seconds"] = round(wall, 1)
    overall["by_kind"] = {
        kind: stats([row for row in samples if row[0] == kind])
        for kind in ("store", "search", "context")
    }
    overall["error_kinds"] = errors
    return overall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="sync,gthread,asgi,asgi-native")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seed", type=int, default=100, help="memories per agent before load")
    parser.add_argument("--out", default="bench/results/http_load.json")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise

    from synthorg.db import roles

    setup_test_environment()
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = BENCH_DB
    # Create and migrate the throw-away database as the owner; seed and serve as the app role.
    app_login = roles.use_owner()
    original_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False
    )
    owner_login = roles.use_app(app_login)
    results = {}
    try:
        print(f"seeding {args.agents} agents x {args.seed} memories", file=sys.stderr)
        keys = seed(args.agents, args.seed)
        env = {**os.environ, "DATABASE_URL": database_url(), "WEB_THREADS": str(args.threads)}
        connection.close()
        for number, variant in enumerate(args.variants.split(",")):
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            command = server_command(variant, port, args.workers, args.threads)
            print(f"[{variant}] starting: {' '.join(command[2:])}", file=sys.stderr)
            log_path = Path(tempfile.gettempdir()) / f"http_load_{variant}.log"
            log = log_path.open("w")
            print(f"[{variant}] server log: {log_path}", file=sys.stderr)
            proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                wait_ready(base, proc)
                load_before = os.getloadavg()[0]
                server_before, db_before = cpu_snapshot(proc.pid)
                print(
                    f"[{variant}] {args.clients} clients for {args.duration:.0f}s", file=sys.stderr
                )
                result = run_load(base, keys, args.clients, args.duration, number)
                server_after, db_after = cpu_snapshot(proc.pid)
                served = max(1, result["requests"])
                server_ms = 1000 * cpu_used(server_before, server_after) / served
                db_ms = 1000 * cpu_used(db_before, db_after) / served
                cores = os.cpu_count() or 1
                # CPU per request is what load from other jobs changes far less than
                # wall-clock figures. Postgres CPU is a lower bound: a backend that exits
                # during the run (its connection recycled after CONN_MAX_AGE) is not read.
                result["server_cpu_ms_per_request"] = round(server_ms, 1)
                result["postgres_cpu_ms_per_request_lower_bound"] = round(db_ms, 1)
                result["req_per_s_bound_by_server_cpu"] = round(cores * 1000 / server_ms, 1)
                result["load_average_before"] = round(load_before, 2)
                result["load_average_after"] = round(os.getloadavg()[0], 2)
                result["server_command"] = " ".join(command[2:])
                results[variant] = result
                print(
                    f"[{variant}] {result['req_per_s']} req/s, p50 {result['p50_ms']} ms, "
                    f"p95 {result['p95_ms']} ms, errors {result['errors']}; CPU/request "
                    f"server {result['server_cpu_ms_per_request']} ms + postgres "
                    f"{result['postgres_cpu_ms_per_request_lower_bound']} ms (lower bound)",
                    file=sys.stderr,
                )
            finally:
                os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                log.close()
        out = {
            "benchmark": "http_load",
            "command": "python bench/http_load.py " + " ".join(sys.argv[1:]),
            "mix": {"store": 0.4, "search": 0.3, "context": 0.3},
            "clients": args.clients,
            "duration_seconds": args.duration,
            "web_workers": args.workers,
            "threads_per_worker": args.threads,
            "agents": args.agents,
            "seed_memories_per_agent": args.seed,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "variants": results,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = ROOT / args.out  # an absolute --out stays absolute
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target}")
    finally:
        roles.use_app(owner_login)
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
