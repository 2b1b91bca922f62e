"""Benchmark: export, import, re-import and erasure of agent content.

Seeds N memories (default 20 000, 10 agents, 10 % shared, each with a 384-dim vector
stamped with the default embedder's id) plus N/10 archived memories in a throw-away
database, then measures, through the same services the commands and endpoints use:

* company export to JSON Lines (rows/s, MB),
* import of that file into a second company (every id remapped, vectors reused),
* the same import again (idempotent: every row skipped),
* erasure of one agent (one transaction),

and the import with re-embedding (a file whose ``embedder_id`` differs) on a smaller
slice (``--reembed``, default 1 000 rows) since that is bound by the real MiniLM model.

    .venv/bin/python bench/portability.py [--memories 20000] [--agents 10] [--reembed 1000]

Writes ``bench/results/portability.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.test.utils import setup_test_environment  # noqa: E402

BASE = datetime(2026, 1, 1, tzinfo=UTC)


def seed(memories: int, agents: int) -> dict:
    from memory.core.models.maintenance import ArchivedMemory
    from memory.core.models.memory import Memory
    from persistence.models import Agent, Company
    from persistence.selectors.embedder import company_embedder

    company = Company.objects.create(name="Bench source", slug="bench-source")
    embedder_id = company_embedder(company).embedder_id
    team = Agent.objects.bulk_create(
        [
            Agent(company=company, name=f"agent-{i}", memory_level="persistent")
            for i in range(agents)
        ]
    )
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    batch = 2000
    for start in range(0, memories, batch):
        rows = []
        vectors = rng.standard_normal((min(batch, memories - start), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for offset, vector in enumerate(vectors):
            i = start + offset
            at = BASE + timedelta(minutes=i)
            rows.append(
                Memory(
                    company=company,
                    agent=team[i % agents],
                    category="episodic",
                    content=f"Memory {i}: deploy of service {i % 97} went fine on node {i % 13}",
                    is_shared=i % 10 == 0,
                    created_at=at,
                    updated_at=at,
                    embedding=vector.tolist(),
                    embedder_id=embedder_id,
                    embedding_status="ready",
                )
            )
        Memory.objects.bulk_create(rows)
        print(f"  seeded {start + len(rows)}/{memories} memories", file=sys.stderr)
    ArchivedMemory.objects.bulk_create(
        [
            ArchivedMemory(
                company=company,
                agent=team[i % agents],
                original_id=uuid.uuid4(),
                namespace="default",
                category="episodic",
                content=f"Archived note {i}",
                created_at=BASE - timedelta(days=90),
                archived_at=BASE,
                mode="extractive",
            )
            for i in range(memories // 10)
        ]
    )
    return {"company": company, "agents": team, "seed_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--reembed", type=int, default=1_000)
    args = parser.parse_args()

    from memory.core.models.memory import Memory
    from persistence.models import Company
    from persistence.services.erasure import agent_erase
    from persistence.services.portability import content_export, content_import

    setup_test_environment()
    from bench.scratch_db import scratch_database

    with scratch_database("portability"):
        data = seed(args.memories, args.agents)
        source = data["company"]
        rows_total = args.memories + args.memories // 10

        started = time.perf_counter()
        lines = list(content_export(company=source))
        export_s = time.perf_counter() - started
        size_mb = sum(len(line.encode()) for line in lines) / 1e6
        print(
            f"export: {len(lines) - 1} rows in {export_s:.1f} s, {size_mb:.1f} MB", file=sys.stderr
        )

        target = Company.objects.create(name="Bench target", slug="bench-target")
        started = time.perf_counter()
        first = content_import(company=target, lines=lines)
        import_s = time.perf_counter() - started
        print(f"import: {import_s:.1f} s", file=sys.stderr)

        started = time.perf_counter()
        again = content_import(company=target, lines=lines)
        reimport_s = time.perf_counter() - started
        print(f"re-import: {reimport_s:.1f} s", file=sys.stderr)

        header, *rows = lines
        slice_rows = [r for r in rows if json.loads(r)["type"] == "memory"][: args.reembed]
        relabelled = [header] + [
            json.dumps({**json.loads(r), "embedder_id": "another-model"}) + "\n" for r in slice_rows
        ]
        third = Company.objects.create(name="Bench reembed", slug="bench-reembed")
        started = time.perf_counter()
        reembedded = content_import(company=third, lines=relabelled)
        reembed_s = time.perf_counter() - started
        print(f"re-embedding import: {len(slice_rows)} rows in {reembed_s:.1f} s", file=sys.stderr)

        agent = data["agents"][0]
        agent_rows = Memory.objects.filter(agent=agent).count()
        started = time.perf_counter()
        report = agent_erase(agent=agent, reason="bench")
        erase_s = time.perf_counter() - started
        print(f"erase: {sum(report.counts.values())} rows in {erase_s:.2f} s", file=sys.stderr)

        result = {
            "command": "bench/portability.py " + " ".join(sys.argv[1:]),
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "loadavg": os.getloadavg(),
            },
            "seed": {
                "memories": args.memories,
                "archived": args.memories // 10,
                "agents": args.agents,
                "seconds": round(data["seed_s"], 2),
            },
            "export": {
                "rows": len(lines) - 1,
                "seconds": round(export_s, 2),
                "rows_per_s": round((len(lines) - 1) / export_s),
                "megabytes": round(size_mb, 2),
            },
            "import_remapped_vectors_reused": {
                "seconds": round(import_s, 2),
                "rows_per_s": round(rows_total / import_s),
                "counts": {k: vars(v) for k, v in first.items()},
            },
            "reimport_idempotent": {
                "seconds": round(reimport_s, 2),
                "counts": {k: vars(v) for k, v in again.items()},
            },
            "import_reembedding": {
                "rows": len(slice_rows),
                "seconds": round(reembed_s, 2),
                "rows_per_s": round(len(slice_rows) / reembed_s, 1),
                "counts": {k: vars(v) for k, v in reembedded.items()},
            },
            "erase_one_agent": {
                "memories_of_agent": agent_rows,
                "seconds": round(erase_s, 3),
                "counts": report.counts,
            },
        }
        out = ROOT / "bench" / "results" / "portability.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
