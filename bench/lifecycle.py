"""A year of daily maintenance with the default config: does the lifecycle destroy anything?::

    python bench/lifecycle.py [--days 365] [--agents 6] [--writes-per-day 40] \
        [--busy-writes-per-day 150] [--seed 7] [--out bench/results/lifecycle.json]

A benchmark company is created with **no config** (the product defaults: consolidation on,
archival on at 90 days, no retention, at most 10,000 memories per agent). Its agents (one
"busy" agent writing ``--busy-writes-per-day``, the others ``--writes-per-day``) each start
with a core memory (tag ``core``) and then write every simulated day a mix of categories and
two namespaces, 5% as shared knowledge and 3% with a 14-day ``expires_at``. After each day's
writes the maintenance cycle runs for every agent at that simulated time (what the daily
schedule does). The busy agent outgrows the per-agent cap, so the cap's path (shared entries
among the oldest) is exercised too.

Reported over time (weekly): memories live, archived (unrestored archive rows), deleted
(cumulative, from the runs' counts) and the core memories still live. At the end every
memory that ever existed (written, or a summary maintenance wrote) and is no longer live is
looked up in the archive by its original id: ``unrecoverable`` counts those with no
restorable archive row (must be 0); a deterministic sample is then restored through
``archive_restore`` by original id. Rows are bulk-inserted without embeddings (maintenance
never reads vectors); summaries are embedded by the company's embedder like any stored
memory. Runs on a throw-away database (``bench/scratch_db.py``); progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import log  # noqa: E402
from bench.maintenance import WORDS  # noqa: E402

NAMESPACES = ("default", "project-notes")
CATEGORY_WEIGHTS = {"episodic": 40, "semantic": 25, "working": 15, "procedural": 10, "social": 10}
SHARED_SHARE = 0.05
EXPIRING_SHARE = 0.03
EXPIRY_DAYS = 14
RESTORE_SAMPLE = 200


def run(*, days: int, agents: int, writes: int, busy_writes: int, seed: int) -> dict:
    from django.utils import timezone

    from memory.core.models.maintenance import ArchivedMemory
    from memory.core.models.memory import Memory
    from memory.core.services.maintenance import run_maintenance
    from persistence.models import Agent
    from persistence.selectors.config import company_config
    from persistence.selectors.embedder import company_embedder
    from persistence.services.companies import company_create

    rng = random.Random(seed)
    end = timezone.now().replace(hour=3, minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    company = company_create(name=f"bench-lifecycle-{end:%Y%m%d%H%M%S}", config={})
    config = company_config(company).memory.consolidation
    agent_rows = Agent.objects.bulk_create(
        [
            Agent(company=company, name=f"agent-{i}", memory_level="persistent")
            for i in range(agents)
        ]
    )
    per_day = {a.pk: (busy_writes if i == 0 else writes) for i, a in enumerate(agent_rows)}
    embedder = company_embedder(company)
    ever: set[uuid.UUID] = set()
    core_ids = _write_cores(company, agent_rows, start, ever)

    timeline = []
    totals = dict.fromkeys(
        ("archived", "deleted", "consolidated", "enforced_archived", "shared_retracted"), 0
    )
    runs = errors = 0
    started = time.perf_counter()
    for day in range(1, days + 1):
        today = start + timedelta(days=day)
        _write_day(company, agent_rows, per_day, today, rng, ever)
        for agent in agent_rows:
            report = run_maintenance(agent=agent, now=today, trigger="schedule", embedder=embedder)
            runs += 1
            errors += len(report.errors)
            for key in totals:
                totals[key] += report.counts[key]
            ever.update(report.consolidation.result.summary_ids)
        if day % 7 == 0 or day == days:
            point = {
                "day": day,
                "written": len(ever),
                "live": Memory.objects.filter(company=company).count(),
                "archived": ArchivedMemory.objects.filter(
                    company=company, restored_at__isnull=True
                ).count(),
                "deleted": totals["deleted"],
                "core_live": Memory.objects.filter(pk__in=core_ids).count(),
                "shared_live": Memory.objects.filter(company=company, is_shared=True).count(),
            }
            timeline.append(point)
            log(f"day {day}: {point} ({time.perf_counter() - started:.0f}s, {errors} run errors)")
    seconds = time.perf_counter() - started

    live = set(Memory.objects.filter(company=company).values_list("pk", flat=True))
    restorable = set(
        ArchivedMemory.objects.filter(company=company, restored_at__isnull=True).values_list(
            "original_id", flat=True
        )
    )
    removed = ever - live
    unrecoverable = removed - restorable
    restore = _restore_sample(sorted(removed & restorable), agent_rows, rng, end)
    busiest = agent_rows[0]
    return {
        "benchmark": "memory lifecycle: a simulated year of daily maintenance, default config",
        "command": (
            f"python bench/lifecycle.py --days {days} --agents {agents} "
            f"--writes-per-day {writes} --busy-writes-per-day {busy_writes} --seed {seed}"
        ),
        "config": {
            "consolidation_enabled": config.enabled,
            "strategy": config.strategy.value,
            "archival_enabled": config.archival.enabled,
            "age_threshold_days": config.archival.age_threshold_days,
            "default_retention_days": config.retention.default_retention_days,
            "retention_rules": len(config.retention.rules),
            "max_memories_per_agent": config.max_memories_per_agent,
        },
        "days": days,
        "agents": agents,
        "writes_per_day": writes,
        "busy_writes_per_day": busy_writes,
        "maintenance_runs": runs,
        "maintenance_run_errors": errors,
        "memories_ever": len(ever),
        "live": len(live),
        "removed": len(removed),
        "archived": len(restorable),
        "deleted": totals["deleted"],
        "consolidated": totals["consolidated"],
        "capped": totals["enforced_archived"],
        "shared_retracted": totals["shared_retracted"],
        "unrecoverable": len(unrecoverable),
        "core_memories_live": Memory.objects.filter(pk__in=core_ids).count(),
        "core_memories": len(core_ids),
        "busy_agent_live": Memory.objects.filter(agent=busiest).count(),
        "restore_sample": restore,
        "timeline": timeline,
        "seconds": round(seconds, 1),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }


def _write_cores(company, agents, start, ever) -> list[uuid.UUID]:
    from memory.core.models.memory import Memory

    rows = [
        Memory(
            id=uuid.uuid4(),
            company=company,
            agent=agent,
            category="semantic",
            content=f"Core memory of {agent.name}: role, standing preferences and open goals.",
            tags=["core"],
            source="self_editing",
            created_at=start,
            updated_at=start,
        )
        for agent in agents
    ]
    Memory.objects.bulk_create(rows)
    ever.update(m.pk for m in rows)
    return [m.pk for m in rows]


def _write_day(company, agents, per_day, today, rng, ever) -> None:
    from memory.core.models.memory import Memory

    categories = list(CATEGORY_WEIGHTS)
    weights = list(CATEGORY_WEIGHTS.values())
    rows = []
    for agent in agents:
        for n in range(per_day[agent.pk]):
            created = today - timedelta(minutes=rng.uniform(1, 23 * 60))
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
            expiring = rng.random() < EXPIRING_SHARE
            rows.append(
                Memory(
                    id=uuid.uuid4(),
                    company=company,
                    agent=agent,
                    namespace=rng.choice(NAMESPACES),
                    category=rng.choices(categories, weights)[0],
                    content=f"{agent.name} {today:%Y-%m-%d} #{n}: {words}.",
                    confidence=round(rng.uniform(0.3, 1.0), 2),
                    is_shared=rng.random() < SHARED_SHARE,
                    created_at=created,
                    updated_at=created,
                    expires_at=created + timedelta(days=EXPIRY_DAYS) if expiring else None,
                )
            )
    Memory.objects.bulk_create(rows, batch_size=2000)
    ever.update(m.pk for m in rows)


def _restore_sample(candidates, agents, rng, now) -> dict:
    """Restore a sample of removed originals by their original id, as an agent would."""
    from memory.core.models.maintenance import ArchivedMemory
    from memory.core.services.archive import archive_restore

    sample = rng.sample(candidates, min(RESTORE_SAMPLE, len(candidates)))
    by_agent = {a.pk: a for a in agents}
    owners = dict(
        ArchivedMemory.objects.filter(original_id__in=sample).values_list("original_id", "agent_id")
    )
    restored = failed = 0
    for original_id in sample:
        try:
            archive_restore(agent=by_agent[owners[original_id]], archive_id=original_id, now=now)
            restored += 1
        except Exception as exc:  # counted, and shown
            failed += 1
            log(f"restore of {original_id} failed: {exc}")
    return {"sampled": len(sample), "restored": restored, "failed": failed}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/lifecycle.py",
        description="Age a company's memories through a simulated year of daily maintenance.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--days", type=int, default=365)
    p.add_argument("--agents", type=int, default=6)
    p.add_argument("--writes-per-day", type=int, default=40)
    p.add_argument("--busy-writes-per-day", type=int, default=150)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "bench/results/lifecycle.json"))
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    import django

    django.setup()
    from bench.scratch_db import scratch_database

    with scratch_database("lifecycle"):
        result = run(
            days=args.days,
            agents=args.agents,
            writes=args.writes_per_day,
            busy_writes=args.busy_writes_per_day,
            seed=args.seed,
        )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(
        f"{result['memories_ever']} memories over {result['days']} days: {result['live']} live, "
        f"{result['archived']} archived, {result['deleted']} deleted, "
        f"{result['unrecoverable']} unrecoverable → {path}"
    )


if __name__ == "__main__":
    main()
