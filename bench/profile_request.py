"""Where each millisecond of a store, a search and a context request goes, through real HTTP.

    python bench/profile_request.py --label before            # 20 s per request kind
    python bench/profile_request.py --label after --duration 30 --clients 4

The benchmark serves the app (gunicorn + uvicorn, the ``asgi`` serving model of
``bench/http_load.py``, one worker of 8 threads so one process holds all the Python work) on
its own embedded PostgreSQL (``var/bench-profile-pg`` of this checkout, kept between runs
so the migrated template is reused), started with ``pg_stat_statements`` preloaded. A
scratch database (``bench/scratch_db.py``) is seeded with ``--agents`` × ``--seed``
memories. Then, for each request kind alone (``store``, ``search``, ``context``), with
``--clients`` concurrent clients for ``--duration`` seconds:

* ``py-spy`` samples the server's Python threads (``--rate`` per second, idle threads left
  out, so a sample is a thread on a CPU or runnable); each stack is put in one bucket —
  embedding, audit, request log, auth, serializers/JSON, ORM + DB driver, app logic,
  framework — by the first rule that matches any of its frames (``BUCKETS``);
* the server's CPU seconds (``/proc``, every process of its group) are read before and
  after: the buckets split that measured CPU in proportion to their samples (threads
  py-spy does not see, such as onnxruntime's intra-op pool, are spread with the rest);
* ``pg_stat_statements`` (reset before each kind) gives the planning and execution time
  PostgreSQL spent per request and the statements that took it.

A second, shorter recording of each kind writes a flame graph SVG beside the JSON
(``--no-svg`` skips it). Everything goes to ``bench/results/profiles/<label>/``:
``profile.json`` (per kind: ms per request by bucket, top 20 functions by own and by total
samples, top statements, latency, load averages) and ``<kind>.svg``.

Requires ``py-spy`` (``bench/requirements-profile.txt``; attaching needs ptrace, which a
root shell has).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PGDATA = ROOT / "var" / "bench-profile-pg"
KINDS = ("store", "search", "context")

#: A request thread's stack goes in the first bucket one of whose needles is in one of its
#: frames (``func (path:line)``), else in ``FRAMEWORK``.
BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("embedding", ("synthorg/embedding/", "onnxruntime", "tokenizers")),
    ("audit", ("persistence/services/audit.py",)),
    (
        "request log",
        (
            "memory/core/services/request_log.py",
            "_run (synthorg/after_response.py",
            "RequestBuffer.flush",
        ),
    ),
    (
        "auth",
        (
            "persistence/api/authentication.py",
            "persistence/selectors/identity.py",
            "persistence/selectors/verified_keys.py",
            "axes/handlers/",
        ),
    ),
    (
        "serializers/JSON",
        (
            "rest_framework/serializers.py",
            "rest_framework/fields.py",
            "rest_framework/renderers.py",
            "rest_framework/parsers.py",
            "/api/serializers",
            "synthorg/api/serializers.py",
            "pydantic",
            "json/",
            "synthorg/http_json.py",
        ),
    ),
    ("ORM + DB driver", ("django/db/", "psycopg/", "psycopg_binary", "psycopg_pool")),
    ("app logic", ("memory/", "persistence/", "synthorg/", "conversations/")),
)
FRAMEWORK = "framework (Django, DRF, middleware, asgiref)"
EVENT_LOOP = "event loop thread (uvicorn/uvloop: HTTP, ASGI; measured per thread)"
OWN_CODE = ("memory/", "persistence/", "synthorg/", "conversations/")
#: Leaf frames of a thread that waits (py-spy's idle detection does not see these here: a
#: blocking call in C shows its Python caller as running). Their samples are not CPU.
WAITS = (
    "_worker (concurrent/futures/thread.py",
    "Condition.wait (",
    "Event.wait (",
    "Connection.wait (psycopg/",
    "select (selectors.py",
    "EpollSelector.select",
    "Queue.get (",
    "SimpleQueue.get",
    "Arbiter.",
)
#: A request thread's stack starts in ``threading``; the worker's main thread runs the
#: event loop (its CPU is read from /proc per thread instead).
THREAD_ROOT = "_bootstrap (threading.py"


def stat_statements_server(pgdata: Path):
    """The embedded server on ``pgdata``, running with ``pg_stat_statements`` preloaded
    (set once with ``ALTER SYSTEM``, then restarted)."""
    import psycopg

    from synthorg.embedded_pg import SUPERUSER, EmbeddedServer

    server = EmbeddedServer(pgdata)
    with server._locked():
        server.ensure_running()
    with psycopg.connect(server.conninfo(SUPERUSER, "postgres"), autocommit=True) as conn:
        loaded = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
        if "pg_stat_statements" not in loaded:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            restart = True
        else:
            restart = False
    if restart:
        server.stop()
        with server._locked():
            server.ensure_running()
    return server


def superuser(server, dbname: str):
    import psycopg

    from synthorg.embedded_pg import SUPERUSER

    return psycopg.connect(server.conninfo(SUPERUSER, dbname), autocommit=True)


def statements(server, dbname: str, requests: int, top: int = 20) -> dict:
    """Planning and execution per request, and the ``top`` statements by total time."""
    with superuser(server, dbname) as conn:
        rows = conn.execute(
            "SELECT query, calls, total_plan_time, total_exec_time, rows "
            "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = %s ORDER BY total_plan_time + total_exec_time DESC",
            [dbname],
        ).fetchall()
    served = max(1, requests)
    plan = sum(r[2] for r in rows)
    execute = sum(r[3] for r in rows)
    return {
        "statements_per_request": round(sum(r[1] for r in rows) / served, 2),
        "planning_ms_per_request": round(plan / served, 3),
        "execution_ms_per_request": round(execute / served, 3),
        "top": [
            {
                "query": " ".join(query.split())[:300],
                "calls": calls,
                "plan_ms_per_call": round(p / calls, 3) if calls else None,
                "exec_ms_per_call": round(e / calls, 3) if calls else None,
                "ms_per_request": round((p + e) / served, 3),
                "rows": n,
            }
            for query, calls, p, e, n in rows[:top]
        ],
    }


def reset_statements(server, dbname: str) -> None:
    with superuser(server, dbname) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: pip install -r bench/requirements-profile.txt")
    return found


def record(
    pid: int, out: Path, *, fmt: str, duration: int, rate: int, extra: tuple[str, ...] = ()
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--subprocesses",
            "--rate",
            str(rate),
            "--duration",
            str(duration),
            "--format",
            fmt,
            "--output",
            str(out),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def parse_collapsed(text: str) -> list[tuple[list[str], int]]:
    """py-spy's raw (collapsed) stacks: ``frame;frame;… count``, root first."""
    stacks = []
    for line in text.splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def bucket_of(frames: list[str]) -> str:
    for name, needles in BUCKETS:
        if any(needle in frame for frame in frames for needle in needles):
            return name
    return FRAMEWORK


def short(frame: str) -> str:
    """``func (/long/path/site-packages/pkg/mod.py:12)`` → ``func (pkg/mod.py:12)``."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", str(ROOT) + "/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})" if where else name


def summarise(
    stacks: list[tuple[list[str], int]], thread_cpu_ms: float, loop_cpu_ms: float, top: int = 20
) -> dict:
    """Buckets and the top functions of the request threads' running samples, in ms per
    request: ``thread_cpu_ms`` (the measured CPU of every thread but the event loop's) split
    by the buckets' shares of those samples; the event loop thread's ``loop_cpu_ms`` as its
    own bucket."""
    running: list[tuple[list[str], int]] = []
    waiting = other = 0
    for frames, count in stacks:
        frames = [f for f in frames if not f.startswith("process ")]
        if not any(THREAD_ROOT in f for f in frames[:3]):
            other += count  # the event loop thread and the gunicorn master
        elif frames and any(wait in frames[-1] for wait in WAITS):
            waiting += count
        else:
            running.append((frames, count))
    total = sum(n for _f, n in running) or 1
    buckets: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, count in running:
        buckets[bucket_of(frames)] += count
        own[short(frames[-1])] += count
        for frame in {short(f) for f in frames}:
            if frame.split(" (", 1)[-1].startswith(OWN_CODE):
                inclusive[frame] += count

    def ms(count: int) -> float:
        return round(thread_cpu_ms * count / total, 2)

    split = {name: ms(count) for name, count in buckets.most_common()}
    split[EVENT_LOOP] = round(loop_cpu_ms, 2)
    return {
        "running_samples": sum(n for _f, n in running),
        "waiting_samples": waiting,
        "event_loop_and_master_samples": other,
        "buckets_ms_per_request": dict(sorted(split.items(), key=lambda kv: -kv[1])),
        "request_thread_share": {
            name: round(count / total, 3) for name, count in buckets.most_common()
        },
        "top_self": [
            {"function": name, "share": round(count / total, 3), "ms_per_request": ms(count)}
            for name, count in own.most_common(top)
        ],
        "top_own_code_inclusive": [
            {"function": name, "share": round(count / total, 3), "ms_per_request": ms(count)}
            for name, count in inclusive.most_common(top)
        ],
    }


def main_thread_cpu(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each process's main thread (uvicorn's event loop in a worker)."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="before", help="bench/results/profiles/<label>/")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--duration", type=int, default=20, help="seconds per kind")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seed", type=int, default=100, help="memories per agent")
    parser.add_argument("--no-svg", action="store_true")
    parser.add_argument(
        "--keep-collapsed", action="store_true", help="keep py-spy's stacks (<kind>.collapsed.txt)"
    )
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    out_dir = ROOT / "bench" / "results" / "profiles" / args.label
    out_dir.mkdir(parents=True, exist_ok=True)

    sys.path.insert(0, str(ROOT))
    for name in ("DATABASE_URL", "DATABASE_OWNER_URL", "SYNTHORG_TEST_DATABASE"):
        os.environ.pop(name, None)
    os.environ["SYNTHORG_PGDATA"] = str(PGDATA)
    server = stat_statements_server(PGDATA)

    from bench import http_load as load  # django.setup(), attached to that server
    from bench.scratch_db import scratch_database

    load_before = os.getloadavg()
    results: dict = {}
    with scratch_database("profile") as dbname:
        with superuser(server, dbname) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        print(f"seeding {args.agents} agents x {args.seed} memories", file=sys.stderr)
        keys = load.seed(args.agents, args.seed)
        env = {**os.environ, "DATABASE_URL": load.database_url()}
        from django.db import connection

        connection.close()
        port = load.free_port()
        shape = argparse.Namespace(workers=1, threads=8)
        proc, log = load.start_server("asgi", port, shape, env)
        try:
            load.wait_ready(port, proc)
            load.warm_up(port, keys)
            for kind in kinds:
                print(f"[{kind}] {args.clients} clients for {args.duration}s", file=sys.stderr)
                reset_statements(server, dbname)
                raw = out_dir / f"{kind}.collapsed.tmp"
                spy = record(proc.pid, raw, fmt="raw", duration=args.duration + 2, rate=args.rate)
                time.sleep(1.0)  # py-spy attaches before the load starts
                pids = load.group_pids(proc.pid)
                cpu_before = load.process_cpu_seconds(pids)
                loop_before = main_thread_cpu(pids)
                samples, errors, wall = load.run_load(
                    port, keys, clients=args.clients, duration=args.duration,
                    mix={kind: 1.0}, seed_value=KINDS.index(kind), label=kind,
                )  # fmt: skip
                cpu_after = load.process_cpu_seconds(pids)
                loop_after = main_thread_cpu(pids)
                _out, spy_err = spy.communicate()
                requests = len(samples)
                server_cpu = load.cpu_used(cpu_before, cpu_after)
                cpu_ms = 1000 * server_cpu / max(1, requests)
                loop_ms = 1000 * load.cpu_used(loop_before, loop_after) / max(1, requests)
                stacks = parse_collapsed(raw.read_text()) if raw.exists() else []
                if args.keep_collapsed:
                    raw.replace(out_dir / f"{kind}.collapsed.txt")
                raw.unlink(missing_ok=True)
                if not stacks:
                    print(f"py-spy recorded nothing: {spy_err[-2000:]}", file=sys.stderr)
                result = {
                    "clients": args.clients,
                    "wall_seconds": round(wall, 1),
                    "latency": load.latency_stats(samples),
                    "error_kinds": errors,
                    "server_cpu_ms_per_request": round(cpu_ms, 2),
                    "python": summarise(stacks, cpu_ms - loop_ms, loop_ms),
                    "postgres": statements(server, dbname, requests),
                    "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
                }
                results[kind] = result
                pg = result["postgres"]
                print(
                    f"[{kind}] {requests} requests, server CPU {cpu_ms:.1f} ms/req "
                    f"({result['python']['buckets_ms_per_request']}); PostgreSQL planning "
                    f"{pg['planning_ms_per_request']} + execution "
                    f"{pg['execution_ms_per_request']} ms/req",
                    file=sys.stderr,
                    flush=True,
                )
                if not args.no_svg:
                    svg = out_dir / f"{kind}.svg"
                    spy = record(
                        proc.pid, svg, fmt="flamegraph", duration=args.duration // 2 + 2,
                        rate=args.rate,
                    )  # fmt: skip
                    time.sleep(1.0)
                    load.run_load(
                        port, keys, clients=args.clients, duration=args.duration // 2,
                        mix={kind: 1.0}, seed_value=10 + KINDS.index(kind), label=f"{kind} svg",
                    )  # fmt: skip
                    spy.communicate()
        finally:
            load.stop_server(proc, log)
    out = {
        "benchmark": "profile_request",
        "command": "python bench/profile_request.py " + " ".join(sys.argv[1:]),
        "label": args.label,
        "server": "gunicorn -k uvicorn_worker.UvicornWorker, 1 worker x 8 threads (asgi)",
        "agents": args.agents,
        "seed_memories_per_agent": args.seed,
        "duration_seconds_per_kind": args.duration,
        "py_spy_rate": args.rate,
        "method": (
            "server_cpu_ms_per_request: /proc CPU of the server's process group over the "
            "kind's run / requests. python.buckets_ms_per_request: that CPU split by the "
            "share of py-spy's non-idle samples per bucket (first matching rule of "
            "BUCKETS over the stack's frames). postgres: pg_stat_statements reset before "
            "each kind; planning/execution are the backends' own timings."
        ),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1_5_15_before": [round(x, 2) for x in load_before],
            "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        },
        "kinds": results,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    target = out_dir / "profile.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
