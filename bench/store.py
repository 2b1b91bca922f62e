"""Throughput of the write path (``memory_store_batch``) on LoCoMo turns, and what the write
gate does with them (formerly ``manage.py bench_store``)::

    python bench/store.py --data ../shared/bench-data/locomo_dev.json \
        [--embedder default|constant] [--conversations conv-26,conv-30] [--batch 500] \
        [--no-context] --out bench/results/store_default.json

For each conversation a company + agent ingests every turn in batches of ``--batch`` (one
transaction and one embedder call per batch), then ingests the same turns again
normalised (lower-cased, punctuation stripped): every one of those must come back
``deduplicated``. ``--embedder constant`` replaces the model with a constant vector so the
figures isolate the gate + insert cost. Runs on a throw-away database
(``bench/scratch_db.py``); writes JSON to ``--out`` and the totals to stdout, progress to
stderr.

Turns are stored as ``bench/retrieval.py`` and ``bench/compare.py`` store them (with the turn
they answer as ``context``, which is embedded too) unless ``--no-context``. With the real
embedder, every batch is first embedded by the bare embedder (the same model instance and
texts) and then stored, alternating, so both see the same machine load (on a shared machine
the load moves within seconds); ``ingest_vs_raw_embedder`` is the share of the embedder's
speed the write path keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import load_conversations, log, percentile, progress  # noqa: E402

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


def run(options: dict) -> dict:
    from memory.core.domain import MemoryStoreRequest, embedding_text
    from memory.core.services.store import memory_store_batch
    from persistence.selectors.embedder import company_embedder
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create

    ids = {s for s in options["conversations"].split(",") if s} or None
    with_context = not options["no_context"]
    conversations = load_conversations(options["data"], ids=ids, with_context=with_context)
    if not conversations:
        raise SystemExit("no conversations matched")
    embedder = ConstantEmbedder() if options["embedder"] == "constant" else None
    batch_seconds: list[float] = []
    batch_size = options["batch"]
    if not 1 <= batch_size <= BATCH:
        raise SystemExit(f"--batch takes 1..{BATCH}")
    report = {
        "embedder": options["embedder"],
        "batch_size": batch_size,
        "context": with_context,
        "conversations": [],
    }
    for conv in conversations:
        tag = uuid.uuid4().hex[:8]
        company = company_create(name=f"bench-store {tag}", slug=f"bench-store-{tag}")
        agent = agent_create(company=company, name="bench", memory_level="persistent")
        model = company_embedder(company) if embedder is None else None
        if model is not None:
            model.embed(["warm up"])
        raw_seconds: list[float] = []

        def ingest(texts, conv=conv, agent=agent, model=model, raw=raw_seconds):
            results, started = [], 0.0
            for start in range(0, len(texts), batch_size):
                chunk = texts[start : start + batch_size]
                if model is not None:
                    t0 = time.perf_counter()
                    model.embed(
                        [
                            embedding_text(text, turn.context)
                            for text, turn in zip(chunk, conv.turns[start:], strict=False)
                        ]
                    )
                    raw.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                results += memory_store_batch(
                    agent=agent,
                    requests=[
                        MemoryStoreRequest(
                            content=text,
                            context=turn.context,
                            category="episodic",
                            created_at=turn.created_at,
                        )
                        for text, turn in zip(chunk, conv.turns[start:], strict=False)
                    ],
                    embedder=embedder,
                )
                batch_seconds.append(time.perf_counter() - t0)
                started += batch_seconds[-1]
                progress(f"{conv.sample_id}", min(start + batch_size, len(texts)), len(texts))
            return results, started

        texts = [t.content for t in conv.turns]
        first, first_s = ingest(texts)
        raw_s = sum(raw_seconds) if model is not None else None
        again, again_s = ingest([_normalised(t) for t in texts], model=None)
        row = {
            "sample_id": conv.sample_id,
            "turns": len(texts),
            "stored": sum(1 for r in first if not r.deduplicated),
            "deduplicated_on_first_ingest": sum(1 for r in first if r.deduplicated),
            "first_ingest_seconds": round(first_s, 3),
            "turns_per_second": round(len(texts) / first_s, 1),
            "raw_embedder_seconds": None if raw_s is None else round(raw_s, 3),
            "reingest_deduplicated": sum(1 for r in again if r.deduplicated),
            "reingest_seconds": round(again_s, 3),
        }
        report["conversations"].append(row)
        log(json.dumps(row))
    rows = report["conversations"]
    turns = sum(r["turns"] for r in rows)
    report["totals"] = {
        "turns": turns,
        "deduplicated_on_first_ingest": sum(r["deduplicated_on_first_ingest"] for r in rows),
        "reingest_dedup_rate": round(sum(r["reingest_deduplicated"] for r in rows) / turns, 4),
        "first_ingest_turns_per_second": round(
            turns / sum(r["first_ingest_seconds"] for r in rows), 1
        ),
        "raw_embedder_texts_per_second": None,
        "ingest_vs_raw_embedder": None,
        "batch_seconds_p50": round(percentile(batch_seconds, 50), 3),
        "batch_seconds_p95": round(percentile(batch_seconds, 95), 3),
    }
    if embedder is None:
        raw = turns / sum(r["raw_embedder_seconds"] for r in rows)
        report["totals"]["raw_embedder_texts_per_second"] = round(raw, 1)
        report["totals"]["ingest_vs_raw_embedder"] = round(
            report["totals"]["first_ingest_turns_per_second"] / raw, 3
        )
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return report


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/store.py",
        description="Benchmark the memory write path (batched store + write gate) on LoCoMo turns.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--data", required=True, help="LoCoMo-format JSON (read in place)")
    p.add_argument("--conversations", default="", help="comma-separated sample ids")
    p.add_argument("--embedder", choices=["default", "constant"], default="default")
    p.add_argument("--no-context", action="store_true", help="store turns alone")
    p.add_argument("--batch", type=int, default=BATCH, help="memories per store call")
    p.add_argument("--out", required=True, help="JSON file to write")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    import django

    django.setup()
    from bench.scratch_db import scratch_database

    with scratch_database("store"):
        report = run(vars(args))
    report["command"] = "python bench/store.py " + " ".join(argv or sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {out}")
    print(json.dumps(report["totals"]))


if __name__ == "__main__":
    main()
