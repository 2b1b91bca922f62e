"""Benchmark: what recording a search in the request log costs the search.

In a throw-away database: one company, one agent with ``--memories`` memories (local
embedder) and a request log already holding ``--log-rows`` entries (the default cap), then
``--rounds`` rounds of the same query mix through ``MemoryService.search``, alternating in
each round a service whose ``memory.request_log`` is enabled (one INSERT per call) and one
where it is disabled (nothing written). Reports the median and p95 of both, their difference,
and the INSERT alone (``request_log_record``).

    .venv/bin/python bench/request_log.py [--memories 300] [--log-rows 10000] [--rounds 200]

Writes ``bench/results/request_log.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--log-rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    from bench.scratch_db import scratch_database

    with scratch_database("request_log"):
        from memory.core.domain import MemoryStoreRequest
        from memory.core.models import RequestLogEntry
        from memory.core.retrieval.query import MemoryQuery
        from memory.core.services.request_log import request_log_record
        from memory.core.services.store import memory_store_batch
        from memory.interfaces.service import MemoryService
        from persistence.models import Agent, Company
        from persistence.principal import Principal
        from synthorg.company_config.memory import RequestLogConfig

        company = Company.objects.create(name="Bench", slug="bench")
        agent = Agent.objects.create(company=company, name="bench-agent", memory_level="persistent")
        texts = [
            f"Note {i}: the {TOPICS[i % len(TOPICS)]} procedure changed in week {i % 52}; "
            f"ask team {i % 7} before touching {TOPICS[(i * 3) % len(TOPICS)]}."
            for i in range(args.memories)
        ]
        for start in range(0, len(texts), 50):
            memory_store_batch(
                agent=agent,
                requests=[
                    MemoryStoreRequest(content=t, category="semantic")
                    for t in texts[start : start + 50]
                ],
            )
        now = datetime.now(UTC)
        RequestLogEntry.objects.bulk_create(
            [
                RequestLogEntry(
                    company=company,
                    agent=agent,
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

        principal = Principal.for_agent(agent)
        on = MemoryService(principal)
        off = MemoryService(principal)
        config = on.config
        assert config.request_log.enabled
        off.__dict__["config"] = config.model_copy(
            update={"request_log": RequestLogConfig(enabled=False)}
        )
        for query in QUERIES:  # warm caches (query vectors, plans) for both
            on.search(MemoryQuery(text=query, limit=10))
            off.search(MemoryQuery(text=query, limit=10))

        timings = {"enabled": [], "disabled": []}
        for round_ in range(args.rounds):
            query = MemoryQuery(text=QUERIES[round_ % len(QUERIES)], limit=10)
            order = [("enabled", on), ("disabled", off)]
            if round_ % 2:
                order.reverse()
            for name, service in order:
                started = time.perf_counter()
                service.search(query)
                timings[name].append((time.perf_counter() - started) * 1000)

        inserts = []
        for i in range(args.rounds):
            started = time.perf_counter()
            request_log_record(
                agent=agent,
                config=config.request_log,
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
            "memories": args.memories,
            "log_rows_before": args.log_rows,
            "rounds": args.rounds,
            "search_log_enabled": enabled,
            "search_log_disabled": disabled,
            "median_overhead_ms": round(enabled["median_ms"] - disabled["median_ms"], 3),
            "insert_alone": _summary(inserts),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "postgres": connection.cursor().connection.info.server_version,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        print(json.dumps(out, indent=2))
        target = ROOT / "bench" / "results" / "request_log.json"
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
