"""Benchmark: list endpoints of operational data over 100k rows per table.

Loads N rows (default 100 000) into each of tasks, cost records, messages and audit entries
of one company (plus 10 % noise in a second company) in a throw-away database, then walks
the main list endpoints page by page through their ``next`` cursors and reports, for the
first page and deep pages, the number of SQL queries and the response time (median of
repeats). For contrast it runs the same page as LIMIT/OFFSET SQL. "SQL" figures are Postgres
execution times from ``EXPLAIN ANALYZE``; "ms" figures are whole requests through the DRF
test client (auth, filtering, serialisation, JSON) in-process.

    .venv/bin/python bench/ops_listing.py [--rows 100000] [--page-size 50] [--repeats 5]

Writes ``bench/results/ops_listing.json``.
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
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

BASE = datetime(2026, 1, 1, tzinfo=UTC)
STATUSES = ["created", "assigned", "in_progress", "in_review", "completed", "failed"]
VERDICTS = ["allowed", "allowed", "allowed", "denied", "error"]
RISKS = ["low", "low", "medium", "high", "critical"]


def load(rows: int) -> dict:
    from django.contrib.auth import get_user_model

    from bench.locomo import progress
    from persistence.models import (
        Agent,
        AuditEntry,
        Company,
        CompanyMembership,
        CostRecord,
        Message,
        Task,
    )
    from persistence.services.agents import api_key_issue

    started = time.perf_counter()
    company = Company.objects.create(name="Bench", slug="bench")
    noise = Company.objects.create(name="Noise", slug="noise")
    agents = Agent.objects.bulk_create(
        [Agent(company=company, name=f"agent-{i}") for i in range(20)]
    )
    noise_agent = Agent.objects.create(company=noise, name="noise")
    batch = 5000

    def bulk(model, make, n):
        for start in range(0, n, batch):
            model.objects.bulk_create([make(i) for i in range(start, min(start + batch, n))])
            progress(f"loading {model.__name__}", min(start + batch, n), n)

    def when(i):
        return BASE + timedelta(seconds=i * 7)

    def task(i, co=company, ags=agents):
        t = when(i)
        return Task(
            company=co,
            title=f"task {i}",
            status=STATUSES[i % len(STATUSES)],
            assignee=ags[i % len(ags)],
            created_at=t,
            updated_at=t,
        )

    bulk(Task, task, rows)
    bulk(Task, lambda i: task(i, noise, [noise_agent]), rows // 10)

    def cost(i, co=company, ags=agents):
        return CostRecord(
            company=co,
            agent=ags[i % len(ags)],
            provider="openai",
            model=["gpt-4o", "gpt-4o-mini", "o3"][i % 3],
            input_tokens=1000 + i % 500,
            output_tokens=100 + i % 50,
            cost=Decimal(i % 1000) / Decimal(100000),
            currency="USD",
            occurred_at=when(i),
            created_at=when(i),
        )

    bulk(CostRecord, cost, rows)
    bulk(CostRecord, lambda i: cost(i, noise, [noise_agent]), rows // 10)

    def message(i, co=company, ags=agents):
        return Message(
            company=co,
            channel=f"channel-{i % 10}",
            sender_agent=ags[i % len(ags)],
            content=f"message {i}",
            created_at=when(i),
        )

    bulk(Message, message, rows)
    bulk(Message, lambda i: message(i, noise, [noise_agent]), rows // 10)

    def audit(i, co=company, ags=agents):
        return AuditEntry(
            company=co,
            actor_agent=ags[i % len(ags)],
            action_type=["memory.read", "fact.write", "tool.call"][i % 3],
            verdict=VERDICTS[i % len(VERDICTS)],
            risk_level=RISKS[i % len(RISKS)],
            created_at=when(i),
        )

    bulk(AuditEntry, audit, rows)
    bulk(AuditEntry, lambda i: audit(i, noise, [noise_agent]), rows // 10)

    from synthorg.db.roles import owner_execute

    owner_execute("ANALYZE")  # statistics: the owner's right
    user = get_user_model().objects.create_user("bench-admin", password="x" * 12)
    CompanyMembership.objects.create(user=user, company=company, role="admin")
    issued = api_key_issue(agent=agents[0])
    return {
        "agents": agents,
        "raw_key": issued.raw_key,
        "user": user,
        "load_seconds": round(time.perf_counter() - started, 1),
    }


def measure(client: APIClient, url: str, repeats: int) -> dict:
    timings, queries, body = [], None, None
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        timings.append(elapsed * 1000)
        queries = len(ctx.captured_queries)
        body = response.json()
    page_sql = ctx.captured_queries[-1]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + page_sql)
        plan = [row[0].strip() for row in cursor.fetchall()]
    execution = next((line for line in plan if line.startswith("Execution Time")), "")
    return {
        "plan": [line for line in plan if "Scan" in line or "Index Cond" in line][:3],
        "explain_execution_ms": float(execution.split(":")[1].split()[0]) if execution else None,
        "ms_median": round(statistics.median(timings), 2),
        "ms_min": round(min(timings), 2),
        "queries": queries,
        "rows": len(body["results"]),
        "next": body.get("next"),
    }


def measure_plain(client: APIClient, url: str, repeats: int) -> dict:
    timings, queries = [], None
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
        assert response.status_code == 200, (url, response.status_code)
        timings.append(elapsed * 1000)
        queries = len(ctx.captured_queries)
    return {"ms_median": round(statistics.median(timings), 2), "queries": queries}


def offset_page_ms(queryset, page: int, page_size: int, repeats: int) -> float:
    """Execution time (EXPLAIN ANALYZE) of the same page fetched by LIMIT/OFFSET, for contrast."""
    sql, params = queryset[(page - 1) * page_size : page * page_size].query.sql_with_params()
    timings = []
    with connection.cursor() as cursor:
        for _ in range(repeats):
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql, params)
            line = next(r[0] for r in cursor.fetchall() if r[0].startswith("Execution Time"))
            timings.append(float(line.split(":")[1].split()[0]))
    return round(statistics.median(timings), 3)


def walk(client, url, pages_to_measure, repeats, page_size, offset_qs):
    """Follow ``next`` links; measure the listed pages (and the last one)."""
    out = []
    page, current, last = 1, url, None
    while current:
        if page in pages_to_measure:
            result = measure(client, current, repeats)
            result["page"] = page
            if offset_qs is not None:
                result["offset_sql_ms_median"] = offset_page_ms(offset_qs, page, page_size, repeats)
            out.append(result)
            nxt = result.pop("next")
        else:
            response = client.get(current)
            nxt = response.json().get("next")
        last = (page, current)
        current = nxt
        page += 1
    if last and last[0] not in pages_to_measure:
        result = measure(client, last[1], repeats)
        result.pop("next")
        result["page"] = last[0]
        if offset_qs is not None:
            result["offset_sql_ms_median"] = offset_page_ms(offset_qs, last[0], page_size, repeats)
        out.append(result)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from persistence.models import AuditEntry, Company, CostRecord, Message, Task

    setup_test_environment()

    from bench.scratch_db import scratch_database

    with scratch_database("ops_listing"):
        data = load(args.rows)
        agent_client = APIClient()
        agent_client.credentials(HTTP_AUTHORIZATION=f"Bearer {data['raw_key']}")
        agent_client.get("/api/v1/me")  # stamps last_used once, outside the measurements
        human_client = APIClient()
        human_client.force_login(data["user"])
        company = Company.objects.get(slug="bench")
        agent = data["agents"][3]
        ps = args.page_size
        endpoints = [
            ("tasks", agent_client, "/api/v1/tasks", Task.objects.filter(company=company)),
            (
                "tasks?status=in_progress",
                agent_client,
                "/api/v1/tasks?status=in_progress",
                Task.objects.filter(company=company, status="in_progress"),
            ),
            ("costs", agent_client, "/api/v1/costs", CostRecord.objects.filter(company=company)),
            (
                "costs?agent=<id>",
                agent_client,
                f"/api/v1/costs?agent={agent.pk}",
                CostRecord.objects.filter(company=company, agent=agent),
            ),
            (
                "messages?channel=channel-3",
                agent_client,
                "/api/v1/messages?channel=channel-3",
                Message.objects.filter(company=company, channel="channel-3"),
            ),
            (
                "audit (human)",
                human_client,
                "/api/v1/audit",
                AuditEntry.objects.filter(company=company),
            ),
            (
                "audit?risk_level=critical (human)",
                human_client,
                "/api/v1/audit?risk_level=critical",
                AuditEntry.objects.filter(company=company, risk_level="critical"),
            ),
        ]
        pages = {1, 10, 100, 1000}
        results = {}
        for name, client, url, qs in endpoints:
            ordering = ("-occurred_at", "-id") if qs.model is CostRecord else ("-created_at", "-id")
            sep = "&" if "?" in url else "?"
            results[name] = walk(
                client, f"{url}{sep}page_size={ps}", pages, args.repeats, ps, qs.order_by(*ordering)
            )
            first, deepest = results[name][0], results[name][-1]
            print(
                f"{name:34s} page 1: {first['ms_median']:6.2f} ms "
                f"(SQL {first['explain_execution_ms']:5.3f}) {first['queries']} q | "
                f"page {deepest['page']}: {deepest['ms_median']:6.2f} ms "
                f"(SQL {deepest['explain_execution_ms']:5.3f}) {deepest['queries']} q | "
                f"OFFSET same page (SQL) {deepest.get('offset_sql_ms_median')} ms"
            )
        aggregates = {}
        for url in (
            "/api/v1/costs/summary?group_by=agent",
            "/api/v1/costs/summary?group_by=model",
            "/api/v1/costs/summary?group_by=day",
            "/api/v1/costs/summary?group_by=day&from=2026-01-01T00:00:00Z&to=2026-01-08T00:00:00Z",
            "/api/v1/costs/budget?month=2026-01",
        ):
            aggregates[url] = measure_plain(human_client, url, args.repeats)
            print(f"{url:88s} {aggregates[url]['ms_median']:8.2f} ms")
        out = {
            "benchmark": "ops_listing",
            "command": "python bench/ops_listing.py " + " ".join(sys.argv[1:]),
            "rows_per_table": args.rows,
            "noise_rows_other_company": args.rows // 10,
            "page_size": ps,
            "repeats": args.repeats,
            "load_seconds": data["load_seconds"],
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "postgres": connection.cursor().connection.info.server_version,
            "endpoints": results,
            "aggregates_full_scan": aggregates,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = ROOT / "bench" / "results" / "ops_listing.json"
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
