"""HTTP throughput of the memory API under concurrent agents, for each serving model.

    python bench/http_load.py                 # what make run serves: 32 clients, 60 s
    python bench/http_load.py --variants asgi,asgi-h11 --rounds 6   # a fair A/B
    python bench/http_load.py --variants asgi-h11=/tmp/before,asgi --rounds 6  # before/after

The benchmark seeds a throw-away database with ``--agents`` agents of ``--seed`` memories
each and starts the real server (gunicorn, 2 workers by default) for every ``--variants``
entry as a subprocess. After a few warm-up requests per kind it runs ``--clients``
concurrent clients (each one agent on one keep-alive connection) for ``--duration`` seconds
per variant: 40 % ``POST /memories`` (new text each time), 30 % ``POST /memories/search``,
30 % ``POST /memories/context`` (``--mix`` changes the shares, e.g. ``--mix store=1``
measures stores alone). With ``--rounds N`` each variant's time is cut into N rounds that
alternate between the variants (all servers stay up), so a comparison is not decided by
what else the machine was doing in one half of the run.

It reports requests/s, p50/p95/p99 latency and errors (any non-2xx or transport failure) per
variant and per request kind, and the CPU time per request of the server processes, of the
PostgreSQL backends (a lower bound) and of the load generator itself (it runs on the same
cores), plus how much CPU every other process on the machine used meanwhile
(``other_processes_cpu_cores``: ≈ 0 on a quiet machine) and the load averages. JSON in
``bench/results/http_load.json`` (``--out``).

Variants:
  sync         gunicorn sync workers, WSGI (the serving model before the MCP server)
  gthread      gunicorn threaded workers (``--threads``), WSGI
  asgi         gunicorn + uvicorn workers (httptools, uvloop), ``synthorg.asgi:application``:
               MCP at /mcp/, Django's WSGI app in a pool of ``--threads`` threads (what
               ``make run`` serves)
  asgi-h11     the same on uvicorn's pure-Python h11 parser and asyncio loop
  asgi-native  the asgi router over Django's own ASGI handler
"""

from __future__ import annotations

import argparse
import http.client
import json
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

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
KINDS = ("store", "search", "context")
PATHS = {
    "store": "/api/v1/memories",
    "search": "/api/v1/memories/search",
    "context": "/api/v1/memories/context",
}
WARM_UP_REQUESTS = 4


VARIANTS = {
    "sync": "gunicorn sync workers, WSGI (the serving model before the MCP server)",
    "gthread": "gunicorn threaded workers (--threads), WSGI",
    "asgi": "gunicorn + uvicorn workers (httptools parser, uvloop), synthorg.asgi:application: "
    "MCP at /mcp/, Django's WSGI app in a pool of --threads threads (what make run serves)",
    "asgi-h11": "the same on uvicorn's pure-Python h11 parser and the asyncio loop "
    "(what asgi ran before httptools and uvloop were installed)",
    "asgi-native": "the asgi router over Django's own ASGI handler",
}


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
    if variant == "asgi-h11":
        return [*gunicorn, "-k", "uvicorn_worker.UvicornH11Worker", "synthorg.asgi:application"]
    if variant == "asgi-native":
        return [
            *gunicorn,
            "-k",
            "uvicorn_worker.UvicornWorker",
            "synthorg.asgi:native_application()",
        ]
    raise SystemExit(f"unknown variant {variant!r} (one of {', '.join(VARIANTS)})")


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
    from memory.core.domain import MemoryStoreRequest
    from memory.core.services.store import memory_store_batch
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


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection_.request("GET", "/healthz")
            status = connection_.getresponse().status
            connection_.close()
            if status in (200, 503):
                return
        except OSError:
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


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent on anything but idle/iowait since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


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
    """The PostgreSQL backends serving the benchmark database (when the server is local),
    this process's own excepted (its connection stays open while the load runs)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return [pid for (pid,) in cursor.fetchall()]


class BackendCpu:
    """CPU seconds of every PostgreSQL backend seen so far, keyed by (pid, start time).

    Sampled every half second while the load runs: the server's threads close their
    connections once they are older than ``CONN_MAX_AGE`` (60 s), so in a 60 s run nearly
    every backend exits just before the end and a before/after reading alone would miss
    their CPU. A backend that exits keeps what it had used at its last sample (at most half
    a second of its work is missed), so the figure stays a (much closer) lower bound.
    """

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], float] = {}

    def sample(self) -> dict[tuple[int, int], float]:
        for pid in backend_pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # utime + stime, keyed with the start time (field 22) so a reused pid is new
            cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            self.seen[(pid, int(fields[19]))] = cpu
        return dict(self.seen)


@dataclass
class Snapshot:
    """CPU counters at one instant: the server's processes, the database backends, this
    process (the load generator) and the whole machine."""

    server: dict[int, float]
    postgres: dict[tuple[int, int], float]
    client: float
    machine: float
    wall: float

    @classmethod
    def take(cls, pgid: int, backends: BackendCpu) -> Snapshot:
        return cls(
            server=process_cpu_seconds(group_pids(pgid)),
            postgres=backends.sample(),
            client=time.process_time(),
            machine=machine_busy_seconds(),
            wall=time.monotonic(),
        )


def cpu_used(before: dict, after: dict) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    index = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return round(values[index], 1)


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        kind, _, share = part.partition("=")
        if kind not in KINDS:
            raise SystemExit(f"--mix: unknown request kind {kind!r} (one of {', '.join(KINDS)})")
        mix[kind] = float(share)
    total = sum(mix.values())
    if total <= 0:
        raise SystemExit("--mix: the shares must add up to more than 0")
    return {kind: share / total for kind, share in mix.items()}


def request_body(kind: str, rng: random.Random) -> bytes:
    if kind == "store":
        body = {"content": sentence(rng) + f" #{rng.random()}", "category": "semantic"}
    elif kind == "search":
        body = {"query": f"what happened with {rng.choice(TOPICS)}?", "limit": 10}
    else:
        body = {"query": f"prepare the {rng.choice(TOPICS)} review", "token_budget": 800}
    return json.dumps(body).encode()


class Client:
    """One agent's keep-alive HTTP/1.1 connection (stdlib ``http.client``).

    The load generator shares the machine's cores with the server, so its own CPU per
    request is part of what limits the measurement; ``http.client`` costs a fraction of
    ``httpx`` per request for the same bytes on the wire (one persistent connection per
    client, JSON bodies, the agent's Bearer key).
    """

    def __init__(self, port: int, key: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.connection: http.client.HTTPConnection | None = None

    def post(self, path: str, body: bytes) -> int:
        """The response's status; raises ``OSError``/``HTTPException`` on transport failure
        (after which the next call reconnects)."""
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            self.connection.request("POST", path, body, self.headers)
            response = self.connection.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def run_load(
    port: int,
    keys: list[str],
    *,
    clients: int,
    duration: float,
    mix: dict[str, float],
    seed_value: int,
    label: str,
    on_tick=lambda: None,
) -> tuple[list[tuple[str, float, bool]], dict[str, int], float]:
    """``clients`` concurrent agents for ``duration`` seconds: the samples
    ``(kind, ms, ok)``, the error kinds and the wall-clock seconds it took."""
    samples: list[tuple[str, float, bool]] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)
    stop_at = [0.0]
    kinds, weights = list(mix), list(mix.values())

    def client(index: int) -> None:
        rng = random.Random(seed_value * 1000 + index)
        agent = Client(port, keys[index % len(keys)])
        start_gate.wait()
        while time.monotonic() < stop_at[0]:
            kind = rng.choices(kinds, weights)[0]
            body = request_body(kind, rng)
            began = time.monotonic()
            try:
                status = agent.post(PATHS[kind], body)
                ok = 200 <= status < 300
                problem = None if ok else f"{kind} HTTP {status}"
            except (OSError, http.client.HTTPException) as exc:
                ok, problem = False, f"{kind} {type(exc).__name__}"
            elapsed = (time.monotonic() - began) * 1000
            with lock:
                samples.append((kind, elapsed, ok))
                if problem:
                    errors[problem] = errors.get(problem, 0) + 1
        agent.close()

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
        on_tick()
        if time.monotonic() >= next_report:
            with lock:
                done = len(samples)
            print(
                f"    [{label}] {time.monotonic() - began:5.0f}s: {done} requests",
                file=sys.stderr,
                flush=True,
            )
            next_report += progress_every
    return samples, errors, time.monotonic() - began


def latency_stats(rows) -> dict:
    latencies = [ms for _k, ms, _ok in rows]
    return {
        "requests": len(rows),
        "errors": sum(1 for _k, _ms, ok in rows if not ok),
        "p50_ms": percentile(latencies, 0.50),
        "p95_ms": percentile(latencies, 0.95),
        "p99_ms": percentile(latencies, 0.99),
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
    }


@dataclass
class Tally:
    """What one variant accumulated over its rounds."""

    samples: list = field(default_factory=list)
    errors: dict = field(default_factory=dict)
    wall: float = 0.0
    server_cpu: float = 0.0
    postgres_cpu: float = 0.0
    client_cpu: float = 0.0
    machine_cpu: float = 0.0
    load_averages: list = field(default_factory=list)
    embed_ms: list = field(default_factory=list)

    def add_round(self, samples, errors, before: Snapshot, after: Snapshot) -> None:
        self.samples += samples
        for problem, count in errors.items():
            self.errors[problem] = self.errors.get(problem, 0) + count
        self.wall += after.wall - before.wall
        self.server_cpu += cpu_used(before.server, after.server)
        self.postgres_cpu += cpu_used(before.postgres, after.postgres)
        self.client_cpu += after.client - before.client
        self.machine_cpu += after.machine - before.machine
        self.load_averages.append(round(os.getloadavg()[0], 2))

    def result(self, cores: int) -> dict:
        result = latency_stats(self.samples)
        served = max(1, len(self.samples))
        result["req_per_s"] = round(len(self.samples) / self.wall, 2)
        result["wall_seconds"] = round(self.wall, 1)
        result["by_kind"] = {
            kind: latency_stats([row for row in self.samples if row[0] == kind])
            for kind in KINDS
            if any(row[0] == kind for row in self.samples)
        }
        result["error_kinds"] = self.errors

        def per_request(seconds: float) -> float:
            return round(1000 * seconds / served, 2)

        ours = self.server_cpu + self.postgres_cpu + self.client_cpu
        # CPU per request is what load from other jobs changes far less than wall-clock
        # figures. Postgres CPU is a lower bound: of a backend that exits during the run (its
        # connection closed) the last half-second sample counts (see BackendCpu).
        result["server_cpu_ms_per_request"] = per_request(self.server_cpu)
        result["postgres_cpu_ms_per_request_lower_bound"] = per_request(self.postgres_cpu)
        result["load_generator_cpu_ms_per_request"] = per_request(self.client_cpu)
        result["total_cpu_ms_per_request"] = per_request(ours)
        result["req_per_s_bound_by_server_cpu"] = (
            round(cores * served / self.server_cpu, 1) if self.server_cpu else None
        )
        # What the same work would allow on idle cores (server + postgres + this client):
        # an estimate for a quiet machine, not a measurement.
        result["req_per_s_bound_by_total_cpu"] = round(cores * served / ours, 1) if ours else None
        # The conditions: how many cores everything else on the machine kept busy meanwhile.
        result["other_processes_cpu_cores"] = round(
            max(0.0, self.machine_cpu - ours) / self.wall, 2
        )
        result["load_average_after_each_round"] = self.load_averages
        if self.embed_ms:
            # The machine's speed at the time, measured right after each of this variant's
            # rounds: CPU per request in query embeddings is comparable across runs.
            p95 = percentile(self.embed_ms, 0.95)
            result["query_embedding_p95_ms"] = p95
            result["total_cpu_per_request_over_embedding_p95"] = (
                round(result["total_cpu_ms_per_request"] / p95, 2) if p95 else None
            )
        return result


class EmbeddingProbe:
    """``count`` query embeddings (texts never seen, so no cache answers) in this process
    after each round, timed: the machine's speed right then, as a yardstick."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.rng = random.Random(99)
        self.warmed = False

    def run(self) -> list[float]:
        if not self.count:
            return []
        from synthorg.embedding import default_embedder

        embedder = default_embedder()
        if not self.warmed:  # the model's load is no measurement
            embedder.embed(["warm up"])
            self.warmed = True
        timings = []
        for _ in range(self.count):
            text = f"{sentence(self.rng)} {self.rng.random()}?"
            began = time.perf_counter()
            embedder.embed([text])
            timings.append((time.perf_counter() - began) * 1000)
        return timings


def variant_root(spec: str) -> Path:
    """``asgi=/tmp/base`` serves the code of another checkout (same database, same venv):
    before/after comparisons in one run. Without ``=PATH``: this checkout."""
    _, _, root = spec.partition("=")
    return Path(root) if root else ROOT


def variant_setup(spec: str, args) -> tuple[str, int, int]:
    """``asgi`` → the serving model with ``--workers``/``--threads``; ``asgi@3x4`` → 3 workers
    of 4 threads each (threads apply to gthread and asgi)."""
    name, _, shape = spec.partition("=")[0].partition("@")
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r} (one of {', '.join(VARIANTS)})")
    if not shape:
        return name, args.workers, args.threads
    workers, _, threads = shape.partition("x")
    if not (workers.isdigit() and threads.isdigit() and int(workers) > 0 and int(threads) > 0):
        raise SystemExit(f"variant {spec!r}: expected NAME@WORKERSxTHREADS, e.g. asgi@2x4")
    return name, int(workers), int(threads)


def start_server(spec: str, port: int, args, env) -> tuple[subprocess.Popen, object]:
    variant, workers, threads = variant_setup(spec, args)
    command = server_command(variant, port, workers, threads)
    env = {**env, "WEB_THREADS": str(threads)}
    log_path = Path(tempfile.gettempdir()) / f"http_load_{spec.partition('=')[0]}.log"
    print(
        f"[{spec}] starting: {' '.join(command[2:])} (log: {log_path})",
        file=sys.stderr,
        flush=True,
    )
    log = log_path.open("w")
    root = variant_root(spec)
    if not (root / "synthorg" / "asgi.py").is_file():
        raise SystemExit(f"variant {spec!r}: {root} is not a checkout of this project")
    proc = subprocess.Popen(
        command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return proc, log


def stop_server(proc: subprocess.Popen, log) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def warm_up(port: int, keys: list[str]) -> None:
    """A few requests of each kind per worker, so one-time costs (URL configuration import,
    first query plans) are not counted in the measurement."""
    rng = random.Random(0)
    agent = Client(port, keys[0])
    for _ in range(WARM_UP_REQUESTS):
        for kind, path in PATHS.items():
            agent.post(path, request_body(kind, rng))
    agent.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="asgi", help=", ".join(VARIANTS))
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=60, help="seconds per variant")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="split each variant's duration into this many rounds, interleaved across the "
        "variants (fair comparisons on a machine whose other load changes)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seed", type=int, default=100, help="memories per agent before load")
    parser.add_argument(
        "--mix",
        default="store=0.4,search=0.3,context=0.3",
        help="request kinds and their shares (e.g. store=1 measures stores alone)",
    )
    parser.add_argument(
        "--embed-probe",
        type=int,
        default=20,
        help="query embeddings timed after each round (0: none); their p95 is the yardstick "
        "CPU per request is divided by",
    )
    parser.add_argument("--out", default="bench/results/http_load.json")
    args = parser.parse_args()
    variants = args.variants.split(",")
    for variant in variants:
        variant_setup(variant, args)
    mix = parse_mix(args.mix)
    cores = os.cpu_count() or 1

    from synthorg.db import roles

    setup_test_environment()
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = BENCH_DB
    # Create and migrate the throw-away database as the owner; seed and serve as the app role.
    app_login = roles.use_owner()
    original_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False
    )
    owner_login = roles.use_app(app_login)
    servers: dict[str, tuple[subprocess.Popen, object, int]] = {}
    try:
        print(f"seeding {args.agents} agents x {args.seed} memories", file=sys.stderr)
        keys = seed(args.agents, args.seed)
        env = {**os.environ, "DATABASE_URL": database_url()}
        connection.close()
        # Every variant's server runs for the whole benchmark (idle ones cost nothing), so
        # the rounds can alternate between them.
        for variant in variants:
            port = free_port()
            proc, log = start_server(variant, port, args, env)
            servers[variant] = (proc, log, port)
        for proc, _log, port in servers.values():
            wait_ready(port, proc)
            warm_up(port, keys)
        load_before = os.getloadavg()
        tallies = {variant: Tally() for variant in variants}
        round_seconds = args.duration / args.rounds
        probe = EmbeddingProbe(args.embed_probe)
        for number in range(args.rounds):
            # Odd rounds run the variants in reverse order (A B, B A, …): neither side always
            # follows the other.
            for variant in variants if number % 2 == 0 else variants[::-1]:
                proc, _log, port = servers[variant]
                print(
                    f"[{variant}] round {number + 1}/{args.rounds}: {args.clients} clients "
                    f"for {round_seconds:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
                backends = BackendCpu()
                before = Snapshot.take(proc.pid, backends)
                samples, errors, _wall = run_load(
                    port,
                    keys,
                    clients=args.clients,
                    duration=round_seconds,
                    mix=mix,
                    seed_value=number * len(variants) + variants.index(variant),
                    label=variant,
                    on_tick=backends.sample,
                )
                after = Snapshot.take(proc.pid, backends)
                tallies[variant].add_round(samples, errors, before, after)
                tallies[variant].embed_ms += probe.run()
        results = {}
        for variant in variants:
            result = tallies[variant].result(cores)
            name, workers, threads = variant_setup(variant, args)
            command = server_command(name, servers[variant][2], workers, threads)
            result["server_command"] = " ".join(command[2:])
            result["web_workers"] = workers
            result["web_threads_per_worker"] = threads
            result["code"] = str(variant_root(variant))
            results[variant] = result
            print(
                f"[{variant}] {result['req_per_s']} req/s, p50 {result['p50_ms']} ms, "
                f"p95 {result['p95_ms']} ms, errors {result['errors']}; CPU/request: server "
                f"{result['server_cpu_ms_per_request']} ms + postgres "
                f"{result['postgres_cpu_ms_per_request_lower_bound']} ms (lower bound) + load "
                f"generator {result['load_generator_cpu_ms_per_request']} ms; other processes "
                f"kept {result['other_processes_cpu_cores']} of {cores} cores busy",
                file=sys.stderr,
            )
        out = {
            "benchmark": "http_load",
            "command": "python bench/http_load.py " + " ".join(sys.argv[1:]),
            "mix": mix,
            "clients": args.clients,
            "duration_seconds_per_variant": args.duration,
            "rounds": args.rounds,
            "round_order": "variants in the given order on even rounds, reversed on odd rounds",
            "web_workers": args.workers,
            "threads_per_worker": args.threads,
            "variant_shape": "NAME[@WORKERSxTHREADS][=CHECKOUT]: workers/threads for this "
            "variant, and another checkout's code (before/after in one run)",
            "agents": args.agents,
            "seed_memories_per_agent": args.seed,
            "warm_up_requests_per_kind": WARM_UP_REQUESTS,
            "machine": {
                "python": platform.python_version(),
                "cpus": cores,
                "load_average_1_5_15_before": [round(x, 2) for x in load_before],
                "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
                "quiet_check": (
                    "other_processes_cpu_cores (per variant) is the CPU everything but the "
                    "server, its PostgreSQL backends and this load generator used during the "
                    "measurement, in cores: near 0 on a quiet machine. Wall-clock figures "
                    "(req/s, latencies) are only comparable between quiet runs; CPU per "
                    "request much less depends on other load."
                ),
            },
            "variant_descriptions": {
                variant: VARIANTS[variant_setup(variant, args)[0]] for variant in variants
            },
            "variants": results,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = ROOT / args.out  # an absolute --out stays absolute
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target}")
    finally:
        for proc, log, _port in servers.values():
            stop_server(proc, log)
        connection.close()
        roles.use_app(owner_login)
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
