"""``manage.py bench_store``: throughput of the write path (``memory_store_batch``) on
LoCoMo turns, and what the write gate does with them.

For each conversation a throwaway company + agent ingests every turn in batches of 500
(one transaction and one embedder call per batch), then ingests the same turns again
normalised (lower-cased, punctuation stripped): every one of those must come back
``deduplicated``. ``--embedder constant`` replaces the model with a constant vector so the
figures isolate the gate + insert cost. Writes JSON; deletes its companies afterwards.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from bench.locomo import load_conversations, log, percentile

BATCH = 500


class ConstantEmbedder:
    embedder_id = "bench:constant"
    dims = 384

    def embed(self, texts):
        return np.full((len(texts), 384), 1 / np.sqrt(384), dtype=np.float32)

    def embed_one(self, text):
        return self.embed([text])[0]


def _normalised(text: str) -> str:
    return re.sub(r"[^\w\s:]", " ", text).lower()


class Command(BaseCommand):
    help = "Benchmark the memory write path (batched store + write gate) on LoCoMo turns."

    def add_arguments(self, parser):
        parser.add_argument("--data", required=True, help="LoCoMo-format JSON (read in place)")
        parser.add_argument("--conversations", default="", help="comma-separated sample ids")
        parser.add_argument("--embedder", choices=["default", "constant"], default="default")
        parser.add_argument("--out", required=True, help="JSON file to write")

    def handle(self, *args, **options):
        from memory.domain import MemoryStoreRequest
        from memory.services.store import memory_store_batch
        from persistence.models import Company
        from persistence.services.agents import agent_create
        from persistence.services.companies import company_create

        ids = {s for s in options["conversations"].split(",") if s} or None
        conversations = load_conversations(options["data"], ids=ids, with_context=False)
        if not conversations:
            raise CommandError("no conversations matched")
        embedder = ConstantEmbedder() if options["embedder"] == "constant" else None
        batch_seconds: list[float] = []
        report = {"embedder": options["embedder"], "batch_size": BATCH, "conversations": []}
        companies = []
        try:
            for conv in conversations:
                tag = uuid.uuid4().hex[:8]
                company = company_create(name=f"bench-store {tag}", slug=f"bench-store-{tag}")
                companies.append(company.pk)
                agent = agent_create(company=company, name="bench", memory_level="persistent")

                def ingest(texts, conv=conv, agent=agent):
                    results, started = [], time.perf_counter()
                    for start in range(0, len(texts), BATCH):
                        chunk = texts[start : start + BATCH]
                        t0 = time.perf_counter()
                        results += memory_store_batch(
                            agent=agent,
                            requests=[
                                MemoryStoreRequest(
                                    content=text, category="episodic", created_at=turn.created_at
                                )
                                for text, turn in zip(chunk, conv.turns[start:], strict=False)
                            ],
                            embedder=embedder,
                        )
                        batch_seconds.append(time.perf_counter() - t0)
                    return results, time.perf_counter() - started

                texts = [t.content for t in conv.turns]
                first, first_s = ingest(texts)
                again, again_s = ingest([_normalised(t) for t in texts])
                row = {
                    "sample_id": conv.sample_id,
                    "turns": len(texts),
                    "stored": sum(1 for r in first if not r.deduplicated),
                    "deduplicated_on_first_ingest": sum(1 for r in first if r.deduplicated),
                    "first_ingest_seconds": round(first_s, 3),
                    "turns_per_second": round(len(texts) / first_s, 1),
                    "reingest_deduplicated": sum(1 for r in again if r.deduplicated),
                    "reingest_seconds": round(again_s, 3),
                }
                report["conversations"].append(row)
                log(json.dumps(row))
        finally:
            Company.objects.filter(pk__in=companies).delete()
        rows = report["conversations"]
        turns = sum(r["turns"] for r in rows)
        report["totals"] = {
            "turns": turns,
            "deduplicated_on_first_ingest": sum(r["deduplicated_on_first_ingest"] for r in rows),
            "reingest_dedup_rate": round(sum(r["reingest_deduplicated"] for r in rows) / turns, 4),
            "first_ingest_turns_per_second": round(
                turns / sum(r["first_ingest_seconds"] for r in rows), 1
            ),
            "batch_seconds_p50": round(percentile(batch_seconds, 50), 3),
            "batch_seconds_p95": round(percentile(batch_seconds, 95), 3),
        }
        Path(options["out"]).parent.mkdir(parents=True, exist_ok=True)
        Path(options["out"]).write_text(json.dumps(report, indent=2) + "\n")
        self.stdout.write(json.dumps(report["totals"]))
