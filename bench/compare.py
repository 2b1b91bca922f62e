"""Mem0 OSS and this service side by side on the same LoCoMo file, with the same embedder.

One command (the optional dependencies live in their own virtualenv, never in
requirements.txt)::

    make bench-compare                      # creates .venv-compare, then runs this
    .venv-compare/bin/python bench/compare.py --data ../shared/bench-data/locomo_dev.json \
        [--conversations conv-26,conv-30] --out bench/results/compare_mem0.json

Both engines store the same text per memory: a LoCoMo turn plus the turn it answers
(``memory.core.domain.embedding_text``, what ``bench/retrieval.py`` stores), one memory per turn,
one agent/user per conversation, and answer every scored question (categories 1–4) with a
top-10 search. Only the engines differ:

* **this service**, in process: ``memory_store_batch`` (batches of 500) and
  ``memory_search`` with the product's default retrieval config (``bench.locomo``), on a
  throw-away database (``bench/scratch_db.py``);
* **Mem0** 2.2.1 (``Memory.from_config``): embedded Qdrant in a temporary directory,
  ``add(..., infer=False)`` per turn (no LLM), ``search(top_k=10, threshold=0)``, with
  *our* embedder (the shipped int8 MiniLM, the same process-wide instance) injected as its
  embedding model. Mem0's optional spaCy lemmatiser and entity extractor are not installed,
  which is how ``pip install mem0ai`` leaves it (its search then ranks by vector similarity).

The bare embedder is also timed on the same texts in the same run, so ingest can be read
as a share of the embedder's own throughput. Writes one JSON and a PNG plot next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")
# Mem0 phones home unless told not to; its LLM is never called with infer=False but is
# constructed at start-up and wants a key.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "unused-infer-false")

from bench.locomo import (  # noqa: E402
    Conversation,
    load_conversations,
    log,
    percentile,
    progress,
    run_locomo,
)

K = 10


def _texts(conversations: list[Conversation]) -> list[str]:
    from memory.core.domain import embedding_text

    return [embedding_text(t.content, t.context) for c in conversations for t in c.turns]


def measure_raw_embedder(texts: list[str]) -> float:
    """Seconds the bare embedder takes for ``texts`` (batches of 500, as the store)."""
    from synthorg.embedding import default_embedder

    embedder = default_embedder()
    embedder.warm_up()
    started = time.perf_counter()
    for start in range(0, len(texts), 500):
        embedder.embed(texts[start : start + 500])
        progress("raw embedder", min(start + 500, len(texts)), len(texts))
    return time.perf_counter() - started


def _mem0_embedder():
    from mem0.embeddings.base import EmbeddingBase

    from synthorg.embedding import default_embedder

    class SynthorgEmbedding(EmbeddingBase):
        """Mem0's embedding interface over our shipped model (the same instance we use)."""

        def __init__(self) -> None:
            super().__init__(None)
            self.model = default_embedder()

        def embed(self, text, memory_action=None):
            return self.model.embed_one(text).tolist()

        def embed_batch(self, texts, memory_action="add"):
            return self.model.embed(list(texts)).tolist()

    return SynthorgEmbedding()


def run_mem0(conversations: list[Conversation], workdir: Path) -> dict[str, Any]:
    import logging

    from mem0 import Memory

    logging.getLogger("mem0").setLevel(logging.WARNING)  # an INFO line per inserted vector

    from memory.core.domain import embedding_text
    from synthorg.embedding import MINILM_DIMS

    ingest_seconds = 0.0
    ingested = 0
    search_ms: list[float] = []
    hits_any = hits_all = questions = 0
    for conv in conversations:
        (workdir / conv.sample_id).mkdir(parents=True, exist_ok=True)
        collection = f"locomo_{conv.sample_id.replace('-', '_')}_{uuid.uuid4().hex[:6]}"
        memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": collection,
                        "path": str(workdir / conv.sample_id / "qdrant"),
                        "embedding_model_dims": MINILM_DIMS,
                        "on_disk": True,
                    },
                },
                "history_db_path": str(workdir / conv.sample_id / "history.db"),
            }
        )
        memory.embedding_model = _mem0_embedder()
        ids: dict[str, str] = {}
        started = time.perf_counter()
        for position, turn in enumerate(conv.turns, start=1):
            result = memory.add(
                [{"role": "user", "content": embedding_text(turn.content, turn.context)}],
                user_id=conv.sample_id,
                metadata={"dia_id": turn.dia_id},
                infer=False,
            )
            ids[turn.dia_id] = result["results"][0]["id"]
            if position % 50 == 0 or position == len(conv.turns):
                progress(f"mem0 {conv.sample_id} ingest", position, len(conv.turns))
        ingest_seconds += time.perf_counter() - started
        ingested += len(conv.turns)
        for position, qa in enumerate(conv.questions, start=1):
            evidence = [ids.get(e) for e in qa.get("evidence") or []]
            if not evidence:
                continue
            started = time.perf_counter()
            found = memory.search(
                str(qa["question"]), top_k=K, filters={"user_id": conv.sample_id}, threshold=0.0
            )
            search_ms.append((time.perf_counter() - started) * 1000)
            top = {hit["id"] for hit in found["results"][:K]}
            wanted = {e for e in evidence if e is not None}
            questions += 1
            hits_any += bool(wanted & top)
            hits_all += len(wanted) == len(evidence) and wanted <= top
            if position % 25 == 0 or position == len(conv.questions):
                progress(f"mem0 {conv.sample_id} search", position, len(conv.questions))
    return {
        "memories": ingested,
        "questions": questions,
        "ingest_seconds": ingest_seconds,
        "search_ms_samples": search_ms,
        "hits_any@10": hits_any,
        "hits_all@10": hits_all,
    }


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The conversations' raw figures pooled into one row (percentiles over every search)."""
    search_ms = [ms for run in runs for ms in run["search_ms_samples"]]
    memories = sum(run["memories"] for run in runs)
    questions = sum(run["questions"] for run in runs)
    return {
        "memories": memories,
        "questions": questions,
        "ingest_per_s": round(memories / sum(run["ingest_seconds"] for run in runs), 1),
        "search_ms": {
            "p50": round(percentile(search_ms, 50), 2),
            "p95": round(percentile(search_ms, 95), 2),
        },
        "recall_any@10": round(sum(run["hits_any@10"] for run in runs) / questions, 4),
        "recall_all@10": round(sum(run["hits_all@10"] for run in runs) / questions, 4),
    }


def run_ours(data: str, conversation_id: str) -> dict[str, Any]:
    """One conversation through this service (``samples``: raw figures, pooled later)."""
    return run_locomo(
        data=data,
        conversation_ids={conversation_id},
        mode="hybrid",
        ks=(K,),
        with_context=True,
        retrieval={},  # the product's default retrieval config
        samples=True,
    )


def _setup_django() -> None:
    import django

    django.setup()  # starts the embedded PostgreSQL unless DATABASE_URL is set


def _mem0_version() -> str:
    from importlib.metadata import version

    return version("mem0ai")


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours, mem0 = report["synthorg"], report["mem0"]
    panels = [
        ("ingest (memories/s)", "ingest_per_s", None),
        ("search p50 (ms)", ("search_ms", "p50"), None),
        ("search p95 (ms)", ("search_ms", "p95"), None),
        ("recall_any@10", "recall_any@10", (0, 1)),
        ("recall_all@10", "recall_all@10", (0, 1)),
    ]
    figure, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4))
    for axis, (title, key, limits) in zip(axes, panels, strict=True):

        def value(row, key=key):
            return row[key[0]][key[1]] if isinstance(key, tuple) else row[key]

        values = [value(ours), value(mem0)]
        bars = axis.bar(["SynthOrg", "Mem0"], values, color=["#2b6cb0", "#a0aec0"])
        if key == "ingest_per_s":
            raw = report["raw_embedder"]["texts_per_s"]
            axis.axhline(raw, color="#c53030", linestyle="--", linewidth=1)
            axis.text(1.45, raw, "raw\nembedder", color="#c53030", fontsize=7, va="center")
        axis.bar_label(bars, fmt="%.3g", fontsize=8)
        axis.set_title(title, fontsize=9)
        if limits:
            axis.set_ylim(*limits)
    figure.suptitle(
        f"LoCoMo {report['data']}: {ours['memories']} memories, {ours['questions']} questions, "
        f"same embedder ({report['embedder']}), load {report['load_average'][0]:.1f} "
        f"on {report['cpus']} CPUs",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="LoCoMo-format JSON (read in place)")
    parser.add_argument("--conversations", default="", help="comma-separated sample ids")
    parser.add_argument("--out", default=str(ROOT / "bench/results/compare_mem0.json"))
    args = parser.parse_args()
    ids = {c.strip() for c in args.conversations.split(",") if c.strip()} or None
    conversations = load_conversations(args.data, ids=ids, with_context=True)
    if not conversations:
        sys.exit("no conversation of the data file matches --conversations")

    _setup_django()
    from synthorg.embedding import MINILM_EMBEDDER_ID

    # Conversation by conversation, each engine then the bare embedder, so all three see
    # the same machine load (it moves within seconds on a shared machine).
    ours_runs, mem0_runs, raw_seconds, retrieval = [], [], 0.0, {}
    from bench.scratch_db import scratch_database

    # Our side writes to a throw-away database (bench/scratch_db.py), never the user's.
    with (
        scratch_database("compare"),
        tempfile.TemporaryDirectory(prefix="mem0-bench-") as workdir,
    ):
        for conv in conversations:
            ours_run = run_ours(args.data, conv.sample_id)
            retrieval = ours_run["effective_retrieval"]
            ours_runs.append(ours_run)
            mem0_runs.append(run_mem0([conv], Path(workdir)))
            raw_seconds += measure_raw_embedder(_texts([conv]))
    ours, mem0 = pooled(ours_runs), pooled(mem0_runs)
    ours["retrieval"] = retrieval
    texts = sum(len(c.turns) for c in conversations)
    raw = {"texts": texts, "texts_per_s": round(texts / raw_seconds, 1)}
    report = {
        "command": "python bench/compare.py " + " ".join(sys.argv[1:]),
        "data": Path(args.data).name,
        "conversations": [c.sample_id for c in conversations],
        "embedder": MINILM_EMBEDDER_ID,
        "same_text": "turn + the turn it answers (memory.core.domain.embedding_text)",
        "mem0": {"version": _mem0_version(), "vector_store": "qdrant (embedded, on disk)"} | mem0,
        "raw_embedder": raw,
        "synthorg": ours,
        "ratios": {
            "ingest_vs_mem0": round(ours["ingest_per_s"] / mem0["ingest_per_s"], 2),
            "ingest_vs_raw_embedder": round(ours["ingest_per_s"] / raw["texts_per_s"], 3),
            "mem0_ingest_vs_raw_embedder": round(mem0["ingest_per_s"] / raw["texts_per_s"], 3),
            "search_p95_mem0_over_ours": round(
                mem0["search_ms"]["p95"] / max(ours["search_ms"]["p95"], 1e-9), 2
            ),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out.with_suffix(".png"))
    log(f"wrote {out} and {out.with_suffix('.png')}")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
