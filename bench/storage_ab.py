"""Row layout A/B: memories written with the vector TOASTed vs kept in the row.

PostgreSQL decides where a value lives when the row is written, from the column's storage
setting at that moment. So one table can hold both layouts: this benchmark writes the same
LoCoMo conversation twice into one throw-away database, once per company, first with the
pre-0013 layout (PostgreSQL's defaults: the toaster moves the vector out of line) and then
with migration 0013's (no TOAST below a page; ``MAIN`` for the vector and the filter
columns). Then it
asks every question of the conversation against both agents, alternating which goes first,
so machine load hits both layouts alike, and reports per layout: the whole search
(``memory_search``, query embedding included) and its stages, the TOAST values per row, and
the buffers one exact dense scan reads (``EXPLAIN (ANALYZE, BUFFERS)``).

    python bench/storage_ab.py --data ../shared/bench-data/locomo_dev.json \
        --conversation conv-26 --out bench/results/storage_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from bench.locomo import load_conversations, log, percentile, store_turns  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402

LAYOUTS = ("extended", "main")


def _set_storage(layout: str) -> None:
    from importlib import import_module

    from synthorg.db.roles import owner_execute

    migration = import_module("memory.core.migrations.0013_embedding_storage_main")
    owner_execute(migration._storage(layout.upper()))


def _toasted(agent) -> dict[str, int]:
    from django.db import connection

    columns = ("embedding", "embedder_id", "content", "context", "search_vector")
    counts = ", ".join(f"count(pg_column_toast_chunk_id(m.{c}))" for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {counts} FROM memory_memory m WHERE m.agent_id = %s", [agent.pk])
        return dict(zip(columns, cursor.fetchone(), strict=True))


def _exact_scan(agent, vector: str) -> dict[str, float]:
    """The dense leg's exact scan of the agent's rows, as the search writes its filter."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT m.id, 1 - (m.embedding <=> %s::vector) "
            "AS sim FROM memory_memory m WHERE m.agent_id = %s AND NOT m.is_shared "
            "AND m.superseded_at IS NULL AND m.embedder_id = %s "
            "AND vector_dims(m.embedding) = 384 ORDER BY sim DESC, m.id LIMIT 50",
            [vector, agent.pk, agent.company.memories.first().embedder_id],
        )
        plan = cursor.fetchone()[0][0]
    return {"ms": plan["Execution Time"], "buffers": plan["Plan"]["Shared Hit Blocks"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/bench-data/locomo_dev.json")
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--out", default="bench/results/storage_ab.json")
    args = parser.parse_args()

    with scratch_database("storage_ab"):
        from memory.core.retrieval.query import MemoryQuery
        from memory.core.selectors.search import memory_search
        from persistence.selectors.config import company_config
        from persistence.selectors.embedder import company_embedder
        from persistence.services.agents import agent_create
        from persistence.services.companies import company_create
        from synthorg.db.roles import owner_execute
        from synthorg.embedding import query_embedding_cache
        from synthorg.retrieval.vectors import vector_literal

        (conv,) = load_conversations(args.data, ids={args.conversation}, with_context=True)
        agents = {}
        for layout in LAYOUTS:
            _set_storage(layout)
            company = company_create(name=f"layout {layout}", slug=f"layout-{layout}", config={})
            agents[layout] = agent_create(company=company, name=layout, memory_level="persistent")
            company_embedder(company).embed(["warm up"])
            store_turns(agents[layout], conv.turns, label=f"{layout} ingest")
        _set_storage("main")  # what migration 0013 leaves
        owner_execute("ANALYZE memory_memory")

        questions = [str(q["question"]) for q in conv.questions]
        total = {layout: [] for layout in LAYOUTS}
        stages = {layout: {} for layout in LAYOUTS}
        scans = {layout: [] for layout in LAYOUTS}
        embedder = company_embedder(agents["main"].company)
        for position, text in enumerate(questions):
            order = LAYOUTS if position % 2 == 0 else LAYOUTS[::-1]
            vector = vector_literal(embedder.embed([text])[0])
            for layout in order:
                agent = agents[layout]
                query_embedding_cache.clear()
                started = time.perf_counter()
                result = memory_search(
                    agent=agent,
                    query=MemoryQuery(text=text, limit=10),
                    config=company_config(agent.company).memory.retrieval,
                )
                total[layout].append((time.perf_counter() - started) * 1000)
                for stage, value in result.timings.items():
                    stages[layout].setdefault(stage, []).append(value)
                scans[layout].append(_exact_scan(agent, vector))
            if (position + 1) % 25 == 0:
                log(f"  {position + 1}/{len(questions)} questions")

        def summary(values: list[float]) -> dict[str, float]:
            return {
                "p50": round(percentile(values, 50), 2),
                "p95": round(percentile(values, 95), 2),
            }

        report = {
            "benchmark": "storage_ab",
            "command": "python " + " ".join(sys.argv),
            "conversation": args.conversation,
            "memories_per_layout": len(conv.turns),
            "questions": len(questions),
            "layouts": {
                layout: {
                    "storage": "PostgreSQL's defaults (before 0013)"
                    if layout == "extended"
                    else "toast_tuple_target 8160, vector and filter columns MAIN (0013)",
                    "toasted_values": _toasted(agents[layout]),
                    "search_ms": summary(total[layout]),
                    "stage_ms": {stage: summary(v) for stage, v in stages[layout].items()},
                    "exact_scan_ms": summary([s["ms"] for s in scans[layout]]),
                    "exact_scan_buffers": summary([s["buffers"] for s in scans[layout]]),
                }
                for layout in LAYOUTS
            },
            "load_average": os.getloadavg(),
            "cpus": os.cpu_count(),
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.out}")
    for layout in LAYOUTS:
        row = report["layouts"][layout]
        log(
            f"{layout}: search p50/p95 {row['search_ms']}, exact scan {row['exact_scan_ms']} "
            f"({row['exact_scan_buffers']} buffers), toasted {row['toasted_values']}"
        )


if __name__ == "__main__":
    main()
