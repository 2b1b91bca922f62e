"""Benchmark: the approval queue at scale, and first-writer-wins under racing deciders.

Loads N approval items (default 100 000; 10 % pending, the rest decided or expired, 5 %
noise in a second company) into a throw-away database, then measures (median of repeats):

* the console inbox (``GET /console/inbox/``, pending filter) and its selector; the inbox's
  first page, a filtered page and page 5 as p50/p95 over ``--page-samples`` requests;
* ``GET /api/v1/approvals`` first page and page 101 (cursor; the last page if fewer);
* ``approval_decide`` one at a time (each an audited, conditional UPDATE);
* races: two threads, each on its own connection, decide the same R items at once — the
  number of winners must equal R and the losers all get 409.

    .venv/bin/python bench/approvals.py [--items 100000] [--repeats 5] [--races 100]
        [--page-samples 40] [--out PATH]

Writes ``bench/results/approvals.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.utils import timezone  # noqa: E402

RISKS = ["low", "medium", "medium", "high", "critical"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load(items: int):
    from django.contrib.auth import get_user_model

    from orgmemory.models import ApprovalItem
    from persistence.models import Company, CompanyMembership

    company = Company.objects.create(name="Bench", slug="bench")
    noise = Company.objects.create(name="Noise", slug="noise")
    user = get_user_model().objects.create(username="bench-operator")
    CompanyMembership.objects.create(user=user, company=company, role="operator")
    now = timezone.now()
    batch: list = []
    for n in range(items):
        owner = noise if n % 20 == 0 else company
        created = now - timedelta(seconds=(items - n) * 5)
        kind = n % 10
        fields = {
            "company": owner,
            "action_type": "skill_evolver:org_promotion" if n % 3 else "deploy:production",
            "title": f"item {n}",
            "requested_by": "bench",
            "risk_level": RISKS[n % len(RISKS)],
            "source": "bench",
            "created_at": created,
            "expires_at": created + timedelta(days=7),
            "evidence": {"n": n},
        }
        if kind == 0:  # pending, still live
            fields["created_at"] = now - timedelta(seconds=n % 3600)
            fields["expires_at"] = fields["created_at"] + timedelta(days=7)
        elif kind in (1, 2, 3, 4, 5):
            fields |= {"status": "approved", "decided_at": created, "decided_by": user}
        elif kind in (6, 7, 8):
            fields |= {
                "status": "rejected",
                "decided_at": created,
                "decided_by": user,
                "decision_reason": "bench",
            }
        else:
            fields |= {"status": "expired", "expires_at": created + timedelta(minutes=1)}
        batch.append(ApprovalItem(**fields))
        if len(batch) == 5000:
            ApprovalItem.objects.bulk_create(batch)
            batch.clear()
            log(f"  loaded {n + 1}/{items}")
    ApprovalItem.objects.bulk_create(batch)
    from synthorg.db.roles import owner_execute

    owner_execute("ANALYZE orgmemory_approvalitem")  # statistics: the owner's right
    return company, user


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[max(0, int(len(ordered) * 0.95 + 0.5) - 1)], 2)


def timed(fn, repeats: int) -> tuple[float, int]:
    durations, queries = [], 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            fn()
            durations.append((time.perf_counter() - start) * 1000)
        queries = len(captured.captured_queries)
    return round(statistics.median(durations), 2), queries


def timed_p95(fn, repeats: int) -> dict:
    """p50/p95 over ``repeats`` calls (after one warm-up call) and the queries of one call."""
    fn()
    durations, queries = [], 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = fn()
            durations.append((time.perf_counter() - start) * 1000)
        queries = len(captured.captured_queries)
        status = getattr(response, "status_code", 200)
        if status != 200:
            raise RuntimeError(f"inbox answered {status}")
    return {
        "p50_ms": round(statistics.median(durations), 2),
        "p95_ms": p95(durations),
        "queries": queries,
        "samples": repeats,
    }


def new_item(company, n):
    from orgmemory.services.approvals import approval_request

    return approval_request(
        company=company,
        action_type="deploy:production",
        title=f"race {n}",
        risk_level="high",
        source="bench",
        requested_by="bench",
    )


def race(company, users, rounds: int) -> dict:
    from orgmemory.services.approvals import approval_decide
    from persistence.principal import Principal
    from synthorg.errors import ConflictError

    principals = [Principal.for_human(u, company, "operator") for u in users]
    winners = conflicts = 0
    start = time.perf_counter()
    for n in range(rounds):
        item = new_item(company, n)
        barrier = threading.Barrier(len(principals))
        outcomes: list[str] = []

        def decide(principal, decision, item_id=item.pk, barrier=barrier, outcomes=outcomes):
            try:
                barrier.wait()
                approval_decide(
                    company=company,
                    actor=principal,
                    item_id=item_id,
                    decision=decision,
                    reason="bench" if decision == "reject" else "",
                )
                outcomes.append("won")
            except ConflictError:
                outcomes.append("409")
            finally:
                connection.close()

        threads = [
            threading.Thread(target=decide, args=(p, "approve" if i == 0 else "reject"))
            for i, p in enumerate(principals)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners += outcomes.count("won")
        conflicts += outcomes.count("409")
    elapsed = time.perf_counter() - start
    return {
        "rounds": rounds,
        "deciders": len(principals),
        "winners": winners,
        "conflicts_409": conflicts,
        "exactly_one_winner_each": winners == rounds and conflicts == rounds * (len(users) - 1),
        "rounds_per_second": round(rounds / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--races", type=int, default=100)
    parser.add_argument("--page-samples", type=int, default=40)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "approvals.json"))
    args = parser.parse_args()

    from django.contrib.auth import get_user_model

    from orgmemory import inbox
    from orgmemory.services.approvals import approval_decide
    from persistence.models import CompanyMembership
    from persistence.principal import Principal

    setup_test_environment()
    from bench.scratch_db import scratch_database

    with scratch_database("approvals"):
        log(f"loading {args.items} approval items")
        company, user = load(args.items)
        client = Client()
        client.force_login(user)
        results: dict = {}
        log("measuring the inbox and the API list")
        results["inbox_selector_pending_ms"], _ = timed(
            lambda: inbox.inbox_page(company=company), args.repeats
        )
        results["console_inbox_page_ms"], results["console_inbox_page_queries"] = timed(
            lambda: client.get("/console/inbox/"), args.repeats
        )
        # The first page as an operator opens it, p95 over --page-samples requests, and the
        # same with a filter (risk high, the created range of the last day) and a deep page.
        results["inbox_first_page"] = timed_p95(
            lambda: client.get("/console/inbox/"), args.page_samples
        )
        results["inbox_filtered_page"] = timed_p95(
            lambda: client.get(
                "/console/inbox/",
                {"risk": "high", "created_after": (timezone.now() - timedelta(days=1)).date()},
            ),
            args.page_samples,
        )
        results["inbox_page_5"] = timed_p95(
            lambda: client.get("/console/inbox/", {"page": 5}), args.page_samples
        )
        results["api_list_first_page_ms"], results["api_list_queries"] = timed(
            lambda: client.get("/api/v1/approvals"), args.repeats
        )
        url, page = "/api/v1/approvals", 1
        while page < 101:
            following = client.get(url).json()["next"]
            if following is None:
                break
            url, page = following, page + 1
        results["api_list_deep_page"] = page
        results["api_list_deep_page_ms"], _ = timed(lambda: client.get(url), args.repeats)
        log("measuring single decisions")
        principal = Principal.for_human(user, company, "operator")
        singles = []
        for n in range(args.races):
            item = new_item(company, n)
            start = time.perf_counter()
            approval_decide(company=company, actor=principal, item_id=item.pk, decision="approve")
            singles.append((time.perf_counter() - start) * 1000)
        results["decide_ms_p50"] = round(statistics.median(singles), 2)
        results["decide_ms_p95"] = p95(singles)
        log(f"racing two deciders on {args.races} items")
        second = get_user_model().objects.create(username="bench-operator-2")
        CompanyMembership.objects.create(user=second, company=company, role="operator")
        results["race"] = race(company, [user, second], args.races)
        payload = {
            "benchmark": "approvals",
            "command": "bench/approvals.py " + " ".join(sys.argv[1:]),
            "items": args.items,
            "repeats": args.repeats,
            "results": results,
            "machine": {
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_avg": [round(x, 2) for x in os.getloadavg()],
            },
            "finished_at": datetime.now(UTC).isoformat(),
        }
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
        print(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
