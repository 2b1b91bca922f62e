"""Benchmark: what recording a search in the request log costs the agent that searched.

In a throw-away database: two companies with one agent each and the same ``--memories``
memories (local embedder), one whose ``memory.request_log`` is enabled (its log already
holding ``--log-rows`` entries, the default cap) and one where it is disabled. The Django
application is served over real HTTP by a WSGI server in this process (``wsgiref``: the
response is sent, then closed — when the service writes its after-response bookkeeping); the
agents' ``POST /api/v1/memories/search`` calls alternate, ``--rounds`` each, with a
``--pause`` between calls (an agent thinks between searches; the pause lets a previous
request's after-response work finish, so it is not charged to the next request). Reports
the median and p95 of the latency the client observed for each, their difference, and the
INSERT alone (``request_log_record``, in-process).

    .venv/bin/python bench/request_log.py [--memories 300] [--log-rows 10000] [--rounds 200]

Writes ``bench/results/request_log.json`` (``--out`` to write elsewhere, e.g. to compare a
checkout of an older commit).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

QUERIES = [
    "when does billing deploy",
    "staging database reset",
    "who approves rollbacks",
    "invoice renderer version",
    "on-call rotation handover",
]
TOPICS = ["billing", "staging", "rollback", "invoice", "on-call", "deploy", "database", "CI"]


def _pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values):
    return {
        "median_ms": round(statistics.median(values), 3),
        "p95_ms": round(_pct(values, 0.95), 3),
        "n": len(values),
    }


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # no access log on the console
        pass


def _serve():
    """The application on a free port, served by one thread (returned to join after
    ``server.shutdown()``: it closes its database connection, so the scratch drop works)."""
    from django.core.wsgi import get_wsgi_application
    from django.db import connections

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=_Quiet)

    def run() -> None:
        try:
            server.serve_forever()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return server, thread


def _search(port: int, key: str, query: str) -> float:
    body = json.dumps({"query": query, "limit": 10})
    started = time.perf_counter()
    client = http.client.HTTPConnection("127.0.0.1", port)
    client.request(
        "POST",
        "/api/v1/memories/search",
        body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    response = client.getresponse()
    payload = response.read()  # Content-Length: complete before the server closes
    elapsed = (time.perf_counter() - started) * 1000
    client.close()
    if response.status != 200:
        raise SystemExit(f"search answered {response.status}: {payload[:300]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--log-rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pause", type=float, default=0.03, help="seconds between calls")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "request_log.json"))
    args = parser.parse_args()

    from bench.scratch_db import scratch_database

    with scratch_database("request_log"):
        from memory.core.domain import MemoryStoreRequest
        from memory.core.models import RequestLogEntry
        from memory.core.services.request_log import request_log_record
        from memory.core.services.store import memory_store_batch
        from persistence.models import Agent, Company
        from persistence.selectors.config import company_config
        from persistence.services.agents import api_key_issue
        from persistence.services.companies import company_config_set

        texts = [
            f"Note {i}: the {TOPICS[i % len(TOPICS)]} procedure changed in week {i % 52}; "
            f"ask team {i % 7} before touching {TOPICS[(i * 3) % len(TOPICS)]}."
            for i in range(args.memories)
        ]
        keys, agents = {}, {}
        for name in ("enabled", "disabled"):
            company = Company.objects.create(name=f"Bench {name}", slug=f"bench-{name}")
            if name == "disabled":
                company_config_set(
                    company=company, data={"memory": {"request_log": {"enabled": False}}}
                )
            agent = Agent.objects.create(
                company=company, name=f"bench-{name}", memory_level="persistent"
            )
            for start in range(0, len(texts), 50):
                memory_store_batch(
                    agent=agent,
                    requests=[
                        MemoryStoreRequest(content=t, category="semantic")
                        for t in texts[start : start + 50]
                    ],
                )
            keys[name] = api_key_issue(agent=agent).raw_key
            agents[name] = agent
        logged = agents["enabled"]
        now = datetime.now(UTC)
        RequestLogEntry.objects.bulk_create(
            [
                RequestLogEntry(
                    company_id=logged.company_id,
                    agent=logged,
                    kind="search",
                    via="rest",
                    query=QUERIES[i % len(QUERIES)],
                    result_count=10,
                    latency_ms=5.0,
                    created_at=now - timedelta(seconds=i),
                )
                for i in range(args.log_rows)
            ],
            batch_size=5000,
        )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_requestlogentry")

        server, thread = _serve()
        port = server.server_address[1]
        for query in QUERIES:  # warm caches (query vectors, plans, key lookups) for both
            for name in keys:
                _search(port, keys[name], query)
                time.sleep(args.pause)
        before = RequestLogEntry.objects.filter(company_id=logged.company_id).count()

        timings = {"enabled": [], "disabled": []}
        for round_ in range(args.rounds):
            query = QUERIES[round_ % len(QUERIES)]
            order = ["enabled", "disabled"] if round_ % 2 == 0 else ["disabled", "enabled"]
            for name in order:
                timings[name].append(_search(port, keys[name], query))
                time.sleep(args.pause)
        time.sleep(0.5)
        server.shutdown()
        thread.join()
        written = RequestLogEntry.objects.filter(company_id=logged.company_id).count() - before
        if written != args.rounds:
            raise SystemExit(f"the log holds {written} new rows for {args.rounds} searches")

        config = company_config(logged.company).memory.request_log
        inserts = []
        for i in range(args.rounds):
            started = time.perf_counter()
            request_log_record(
                agent=logged,
                config=config,
                kind="search",
                via="rest",
                query=QUERIES[i % len(QUERIES)],
                result_count=10,
                latency_ms=5.0,
            )
            inserts.append((time.perf_counter() - started) * 1000)

        enabled, disabled = _summary(timings["enabled"]), _summary(timings["disabled"])
        out = {
            "benchmark": "request_log",
            "command": "python bench/request_log.py " + " ".join(sys.argv[1:]),
            "measured": "client-observed latency of POST /api/v1/memories/search over HTTP",
            "memories": args.memories,
            "log_rows_before": args.log_rows,
            "rounds": args.rounds,
            "pause_s": args.pause,
            "log_rows_written": written,
            "search_log_enabled": enabled,
            "search_log_disabled": disabled,
            "median_overhead_ms": round(enabled["median_ms"] - disabled["median_ms"], 3),
            "p95_overhead_ms": round(enabled["p95_ms"] - disabled["p95_ms"], 3),
            "insert_alone": _summary(inserts),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "postgres": connection.cursor().connection.info.server_version,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        print(json.dumps(out, indent=2))
        target = Path(args.out)
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
