"""Maintenance throughput at scale (formerly ``manage.py bench_maintenance``)::

    python bench/maintenance.py [--memories 100000] [--agents 20] [--max-per-agent 3000] \
        [--seed 7] [--out bench/results/maintenance_throughput.json]

Seeds a benchmark company with ``--memories`` memories spread over ``--agents`` agents
(deterministic RNG; ages uniform over 0–400 days, five categories, 2% already expired), then
runs the maintenance cycle for every agent, pass after pass, until a pass changes nothing.
Config: ``working`` kept 30 days, ``simple`` strategy, archival on at 90 days, at most
``--max-per-agent`` memories per agent.

Reports memories processed per second — memories removed from the hot store (retention,
expiry, consolidation into summaries, max-memories enforcement) over the wall time of all
passes — plus the first pass alone. Writes JSON to ``--out``. The seeded rows are
bulk-inserted without embeddings (maintenance never reads vectors); the summaries it writes
are embedded with the company's embedder like any stored memory. Runs on a throw-away
database (``bench/scratch_db.py``); progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

_WORDS_TEXT = (
    "deploy billing cluster review meeting customer invoice latency incident roadmap design "
    "budget hiring onboarding migration schema release retro vendor contract audit security "
    "alert backlog sprint feedback outage metrics dashboard quarterly planning"
)
WORDS = _WORDS_TEXT.split()


from bench.locomo import log, progress  # noqa: E402


def run(*, memories: int, agents: int, max_per_agent: int, seed: int) -> dict:
    from django.utils import timezone

    from memory.core.models.maintenance import ArchivedMemory
    from memory.core.models.memory import Memory
    from memory.core.services.maintenance import run_maintenance
    from persistence.models import Agent
    from persistence.selectors.embedder import company_embedder
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute

    rng = random.Random(seed)
    now = timezone.now()
    stamp = now.strftime("%Y%m%d%H%M%S")
    company = company_create(
        name=f"bench-maintenance-{stamp}",
        config={
            "memory": {
                "consolidation": {
                    "strategy": "simple",
                    "max_memories_per_agent": max_per_agent,
                    "retention": {"rules": [{"category": "working", "retention_days": 30}]},
                    "archival": {"enabled": True, "age_threshold_days": 90},
                }
            }
        },
    )
    agent_rows = Agent.objects.bulk_create(
        [Agent(company=company, name=f"bench-{i}") for i in range(agents)]
    )
    log(f"seeding {memories} memories over {agents} agents …")
    seeded_at = time.perf_counter()
    _seed(company, agent_rows, memories, rng, now)
    seed_seconds = time.perf_counter() - seeded_at
    log(f"seeded in {seed_seconds:.1f}s")
    owner_execute("ANALYZE memory_memory")  # statistics: the owner's right

    embedder = TimedEmbedder(company_embedder(company))
    passes = []
    total_seconds = 0.0
    while True:
        started = time.perf_counter()
        embedder.seconds = 0.0
        reports = [
            run_maintenance(agent=a, now=now, trigger="manual", embedder=embedder)
            for a in agent_rows
        ]
        seconds = time.perf_counter() - started
        total_seconds += seconds
        counts = {key: sum(r.counts[key] for r in reports) for key in reports[0].counts}
        processed = sum(r.processed for r in reports)
        passes.append(
            {
                "seconds": round(seconds, 3),
                "embedding_seconds": round(embedder.seconds, 3),
                "processed": processed,
                "memories_before": sum(r.memories_before for r in reports),
                "errors": sum(len(r.errors) for r in reports),
                **counts,
            }
        )
        log(
            f"pass {len(passes)}: {processed} processed in {seconds:.2f}s "
            f"({processed / seconds:.0f}/s) {counts}"
        )
        if processed == 0 or len(passes) == 20:
            break

    processed_total = sum(p["processed"] for p in passes)
    result = {
        "benchmark": "memory maintenance throughput",
        "command": (
            f"python bench/maintenance.py --memories {memories} --agents {agents} "
            f"--max-per-agent {max_per_agent} --seed {seed}"
        ),
        "memories_seeded": memories,
        "agents": agents,
        "max_memories_per_agent": max_per_agent,
        "seed_seconds": round(seed_seconds, 2),
        "passes": passes,
        "passes_until_steady": len(passes),
        "processed_total": processed_total,
        "maintenance_seconds_total": round(total_seconds, 3),
        "summary_embedding_seconds_total": round(sum(p["embedding_seconds"] for p in passes), 3),
        "processed_per_second": round(processed_total / total_seconds, 1),
        "first_pass_processed_per_second": round(passes[0]["processed"] / passes[0]["seconds"], 1),
        "first_pass_store_scanned_per_second": round(
            passes[0]["memories_before"] / passes[0]["seconds"], 1
        ),
        "memories_left": Memory.objects.filter(company=company).count(),
        "archived": ArchivedMemory.objects.filter(company=company).count(),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "embedder": "company default (all-MiniLM-L6-v2 int8 ONNX) for summaries",
    }
    return result


def _seed(company, agents, total, rng, now) -> None:
    from memory.core.models.memory import Memory
    from synthorg.enums import MemoryCategory

    categories = [c.value for c in MemoryCategory]
    batch: list[Memory] = []
    for n in range(total):
        agent = agents[n % len(agents)]
        created = now - timedelta(days=rng.uniform(0.5, 400))
        expired = rng.random() < 0.02
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        batch.append(
            Memory(
                company=company,
                agent=agent,
                category=rng.choice(categories),
                content=f"Note {n}: {words}.",
                confidence=round(rng.uniform(0.3, 1.0), 2),
                created_at=created,
                updated_at=created,
                expires_at=now - timedelta(hours=1) if expired else None,
            )
        )
        if len(batch) == 5000:
            Memory.objects.bulk_create(batch)
            batch.clear()
            progress("seeding", n + 1, total)
    if batch:
        Memory.objects.bulk_create(batch)


class TimedEmbedder:
    """Delegates to the company's real embedder and adds up the time spent in it, to show
    how much of a pass is the (CPU-bound) embedding of the summaries."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def embedder_id(self) -> str:
        return self.inner.embedder_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed(self, texts):
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_one(self, text):
        return self.embed([text])[0]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/maintenance.py",
        description="Benchmark memory maintenance throughput (memories processed per second).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--agents", type=int, default=20)
    p.add_argument("--max-per-agent", type=int, default=3000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "bench/results/maintenance_throughput.json"))
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    import django

    django.setup()
    from bench.scratch_db import scratch_database

    with scratch_database("maintenance"):
        result = run(
            memories=args.memories,
            agents=args.agents,
            max_per_agent=args.max_per_agent,
            seed=args.seed,
        )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(
        f"{result['processed_total']} memories processed in "
        f"{result['maintenance_seconds_total']}s over {result['passes_until_steady']} passes: "
        f"{result['processed_per_second']}/s → {path}"
    )


if __name__ == "__main__":
    main()
