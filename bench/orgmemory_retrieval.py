"""Org-memory latency: publish, and relevance query (BM25 only / BM25 + embeddings).

Runs on a throw-away database (``bench/scratch_db.py``), inside one transaction that is
rolled back (both modes see the same empty company at the start).

    .venv/bin/python bench/orgmemory_retrieval.py [--facts 2000] [--queries 200]

Writes bench/results/orgmemory_retrieval.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import transaction  # noqa: E402

from orgmemory.domain import OrgMemoryQuery  # noqa: E402
from orgmemory.selectors import query_facts  # noqa: E402
from orgmemory.services.facts import fact_publish  # noqa: E402
from persistence.models import Company, CompanyMembership  # noqa: E402
from persistence.principal import Principal  # noqa: E402

WORDS = [
    "deploy",
    "release",
    "rollback",
    "database",
    "migration",
    "review",
    "approval",
    "incident",
    "postmortem",
    "budget",
    "customer",
    "privacy",
    "logging",
    "retention",
    "backup",
    "restore",
    "latency",
    "cache",
    "queue",
    "worker",
    "schema",
    "api",
    "version",
    "contract",
    "test",
    "coverage",
    "branch",
    "merge",
    "pipeline",
    "staging",
    "production",
    "secret",
    "key",
    "rotation",
    "audit",
    "access",
    "onboarding",
    "vendor",
    "invoice",
    "travel",
    "expense",
    "hiring",
]
CATEGORIES = ["adr", "procedure", "convention"]


class Rollback(Exception):
    pass


def _percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }


def run(n_facts: int, n_queries: int) -> dict:
    from django.contrib.auth import get_user_model

    rng = random.Random(0)
    results: dict = {"facts": n_facts, "queries": n_queries}
    try:
        with transaction.atomic():
            company = Company.objects.create(name="bench-org", slug="bench-org")
            user = get_user_model().objects.create(username="bench-org-human")
            CompanyMembership.objects.create(company=company, user=user, role="admin")
            human = Principal.for_human(user, company, "admin")
            for mode, embeddings in (("bm25", False), ("hybrid", True)):
                settings.ORGMEMORY_EMBEDDINGS = embeddings
                if embeddings:
                    from synthorg.embedding import default_embedder

                    default_embedder().embed_one("warm up")
                print(f"{mode}: publishing {n_facts} facts", file=sys.stderr, flush=True)
                publish = []
                for i in range(n_facts):
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
                    started = time.perf_counter()
                    fact_publish(
                        company=company,
                        actor=human,
                        content=f"{mode} fact {i}: {text}",
                        category=CATEGORIES[i % 3],
                    )
                    publish.append(time.perf_counter() - started)
                print(f"{mode}: {n_queries} queries", file=sys.stderr, flush=True)
                query = []
                for _ in range(n_queries):
                    context = " ".join(rng.choice(WORDS) for _ in range(6))
                    started = time.perf_counter()
                    query_facts(company=company, query=OrgMemoryQuery(context=context))
                    query.append(time.perf_counter() - started)
                results[mode] = {
                    "live_facts_in_company": n_facts * (2 if embeddings else 1),
                    "publish": _percentiles(publish),
                    "query": _percentiles(query),
                }
            raise Rollback
    except Rollback:
        pass
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    from bench.scratch_db import scratch_database

    with scratch_database("orgmemory"):
        results = run(args.facts, args.queries)
    results["command"] = "python bench/orgmemory_retrieval.py " + " ".join(sys.argv[1:])
    out = ROOT / "bench" / "results" / "orgmemory_retrieval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
