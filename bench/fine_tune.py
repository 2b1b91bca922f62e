"""Does the per-company query adapter help the product's default search?

For each data file (LoCoMo format: ``locomo_dev.json``, ``longmemeval_dev.json``), one company
per file on a throw-away database (``bench/scratch_db.py``): every conversation is one agent
whose turns are stored through the store service (the previous turn of the session as the
turn's ``context``, as conversation ingestion stores them), then

1. every question (categories 1–4 with evidence) is asked through ``memory_search`` with the
   company's default retrieval config (hybrid: dense + BM25, RRF): recall_any@10 /
   recall_all@10 **before**;
2. a fine-tune run goes through the product's lifecycle (``fine_tune_start`` →
   ``fine_tune_execute``: pairs mined from the company's rows, training, held-out evaluation,
   promotion only when the nDCG@10 gain reaches ``min_gain``); training time and peak
   memory (tracemalloc: numpy's allocations included; and the process's max RSS) measured;
3. the questions again **after** (the adapter applies only if it was promoted). When the run
   was not promoted, the bench also measures the trained matrix forced active (a bench-only
   checkpoint, labelled ``forced``) so the figures say whether the margin rule refused
   something that would have helped.

With ``--dev-share 0.5`` (the default), every other question of each conversation (the
*gate* half) is given to the company as its ``memory.fine_tune.evaluation_file`` (query and
evidence memory ids, in the throw-away tenant directory, deleted at the end), so promotion
also needs the gain on those; recall is reported on all questions, the gate half and the
*unseen* half (never shown to the run). ``--dev-share 0``: held-out pairs only.

Usage::

    python bench/fine_tune.py --data ../shared/bench-data/locomo_dev.json \\
        --data ../shared/bench-data/longmemeval_dev.json --out bench/results/fine_tune.json

Options: ``--min-gain`` (the margin, default the product's), ``--epochs``,
``--max-training-seconds``, ``--conversations`` (ids, comma-separated; default all).
Data is read from the paths given; nothing from it is copied into the project.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import load_conversations, log, store_turns


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/fine_tune.py", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--data", action="append", required=True, help="a LoCoMo-format file")
    p.add_argument("--out", default="bench/results/fine_tune.json")
    p.add_argument("--min-gain", type=float, default=None, help="memory.fine_tune.min_gain")
    p.add_argument("--epochs", type=int, default=None, help="memory.fine_tune.epochs")
    p.add_argument(
        "--max-training-seconds",
        type=int,
        default=None,
        help="memory.fine_tune.max_training_seconds",
    )
    p.add_argument("--conversations", default="", help="only these sample ids (comma-separated)")
    p.add_argument(
        "--dev-share",
        type=float,
        default=0.5,
        choices=[0.0, 0.5],
        help="0.5: every other question is the company's evaluation_file; 0: none",
    )
    return p


def _scored_questions(conversations, ids_by_conv):
    """(conversation, position among its scored questions, question, evidence memory ids)."""
    for conv in conversations:
        ids = ids_by_conv[conv.sample_id]
        position = 0
        for qa in conv.questions:
            evidence = [ids.get(e) for e in qa.get("evidence") or []]
            if not evidence:
                continue
            yield conv, position, qa, evidence
            position += 1


def _ask(agents, conversations, ids_by_conv) -> dict[str, Any]:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search

    counts = {name: [0, 0, 0] for name in ("all", "gate", "unseen")}
    adapters: set[str] = set()
    for conv, position, qa, evidence in _scored_questions(conversations, ids_by_conv):
        agent = agents[conv.sample_id]
        result = memory_search(agent=agent, query=MemoryQuery(text=str(qa["question"]), limit=10))
        if result.adapter:
            adapters.add(result.adapter)
        top = {hit.memory.pk for hit in result.hits[:10]}
        wanted = {e for e in evidence if e is not None}
        found_any = bool(wanted & top)
        found_all = len(wanted) == len(evidence) and wanted <= top
        for name in ("all", "gate" if position % 2 == 0 else "unseen"):
            counts[name][0] += 1
            counts[name][1] += found_any
            counts[name][2] += found_all

    def ratio(n: int, d: int) -> float:
        return round(n / d, 4) if d else 0.0

    summary: dict[str, Any] = {
        name: {
            "questions": n,
            "recall_any@10": ratio(hit_any, n),
            "recall_all@10": ratio(hit_all, n),
        }
        for name, (n, hit_any, hit_all) in counts.items()
    }
    summary["adapter"] = sorted(adapters)
    return summary


def _write_dev_file(directory: Path, conversations, ids_by_conv) -> int:
    """The gate half of the questions as the company's evaluation_file."""
    lines = [
        json.dumps(
            {
                "query": str(qa["question"]),
                "memory_ids": [str(e) for e in evidence if e is not None],
            }
        )
        for conv, position, qa, evidence in _scored_questions(conversations, ids_by_conv)
        if position % 2 == 0
    ]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dev.jsonl").write_text("\n".join(lines) + "\n")
    return len(lines)


def _force_checkpoint(run, principal) -> str:
    """Bench only: write the not-promoted run's final matrix as a checkpoint and activate it,
    to measure what the margin rule refused."""
    import hashlib

    from django.utils import timezone

    from memory.finetune.models import AdapterCheckpoint
    from memory.finetune.query_adapter import TrainingState, matrix_to_bytes
    from memory.finetune.services import _config, adapter_rollback, checkpoint_directory
    from synthorg.tools import Confirmation

    state = TrainingState.from_bytes(bytes(run.state))
    data = matrix_to_bytes(state.matrix)
    config = _config(run.company)
    checkpoint_id = uuid.uuid4()
    path = checkpoint_directory(run.company, config) / f"{checkpoint_id}.npy"
    path.write_bytes(data)
    AdapterCheckpoint.objects.create(
        id=checkpoint_id, company=run.company, embedder_id=run.embedder_id, dims=run.dims,
        directory=config.checkpoint_path, file_name=path.name,
        sha256=hashlib.sha256(data).hexdigest(), figures={"forced": True},
        created_at=timezone.now(),
    )  # fmt: skip
    adapter_rollback(
        company=run.company, checkpoint_id=checkpoint_id, principal=principal,
        confirmation=Confirmation(reason="bench: measure the refused adapter", via="bench"),
    )  # fmt: skip
    return str(checkpoint_id)


def run_file(path: str, args, tenant_dir: Path) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from memory.finetune.models import FineTuneRun
    from memory.finetune.services import FineTunePlan, fine_tune_execute, fine_tune_start
    from persistence.models import CompanyMembership
    from persistence.principal import Principal
    from persistence.selectors.embedder import company_embedder
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute
    from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID

    ids = {c.strip() for c in args.conversations.split(",") if c.strip()} or None
    conversations = load_conversations(path, ids=ids, with_context=True)
    tag = uuid.uuid4().hex[:8]
    fine_tune: dict[str, Any] = {
        "enabled": True,
        "checkpoint_path": "adapters",
        "base_model": MINILM_EMBEDDER_ID,
    }
    for option, field in (
        ("min_gain", "min_gain"),
        ("epochs", "epochs"),
        ("max_training_seconds", "max_training_seconds"),
    ):
        if getattr(args, option) is not None:
            fine_tune[field] = getattr(args, option)
    company = company_create(
        name=f"bench fine-tune {Path(path).stem} {tag}",
        slug=f"bench-ft-{tag}",
        config={"memory": {"fine_tune": fine_tune}},
    )
    user = get_user_model().objects.create_user(username=f"bench-{tag}", password=None)
    CompanyMembership.objects.create(company=company, user=user, role="owner")
    principal = Principal(company=company, user=user, role="owner")
    company_embedder(company).embed(["warm up"])
    agents, ids_by_conv = {}, {}
    started = time.perf_counter()
    turns = 0
    for conv in conversations:
        agent = agent_create(
            company=company, name=f"c-{conv.sample_id}"[:60], memory_level="persistent"
        )
        agents[conv.sample_id] = agent
        ids_by_conv[conv.sample_id] = store_turns(
            agent, conv.turns, label=f"{conv.sample_id} ingest"
        )
        turns += len(conv.turns)
    ingest_seconds = time.perf_counter() - started
    owner_execute("ANALYZE memory_memory")
    log(f"{Path(path).name}: {turns} turns in {len(conversations)} agents")
    dev_questions = 0
    if args.dev_share > 0:
        from persistence.services.companies import company_config_set

        dev_questions = _write_dev_file(tenant_dir / str(company.pk), conversations, ids_by_conv)
        company_config_set(
            company=company,
            data={"memory": {"fine_tune": {**fine_tune, "evaluation_file": "dev.jsonl"}}},
        )
        company.refresh_from_db()

    before = _ask(agents, conversations, ids_by_conv)
    log(f"before: {before}")

    run = fine_tune_start(company=company, plan=FineTunePlan(), principal=principal, via="bench")
    tracemalloc.start()
    clock = time.perf_counter()
    status = "continue"
    while status == "continue":  # the product queues continuations; the bench runs them inline
        status = fine_tune_execute(run.pk, task_budget=10**6)
    seconds = time.perf_counter() - clock
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    run = FineTuneRun.objects.select_related("company").get(pk=run.pk)
    log(f"run {run.pk}: {run.status} in {seconds:.1f}s; {run.figures.get('ndcg_gain')}")

    after = _ask(agents, conversations, ids_by_conv)
    log(f"after: {after}")
    forced = None
    if run.status == FineTuneRun.Status.NOT_PROMOTED and run.state:
        _force_checkpoint(run, principal)
        forced = _ask(agents, conversations, ids_by_conv)
        log(f"forced: {forced}")
    figures = dict(run.figures)
    return {
        "data": Path(path).name,
        "conversations": len(conversations),
        "turns": turns,
        "ingest_seconds": round(ingest_seconds, 1),
        "dev_gate_questions": dev_questions,
        "run_status": run.status,
        "run_error": run.reason,
        "params": run.params,
        "held_out": {
            "before": figures.get("before"),
            "after": figures.get("after"),
            "ndcg_gain": figures.get("ndcg_gain"),
            "pairs": figures.get("pairs"),
            "train_pairs": figures.get("train_pairs"),
            "held_out_pairs": figures.get("held_out_pairs"),
            "documents": figures.get("documents"),
            "stopped_by": figures.get("stopped_by"),
            "losses": figures.get("losses"),
        },
        "dev_gate": figures.get("dev"),
        "run_seconds": round(seconds, 1),
        "training_seconds": figures.get("training_seconds"),
        "peak_traced_mb": round(peak / 2**20, 1),
        "dev_questions": {"before": before, "after": after, "forced_refused_adapter": forced},
    }


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    import django

    django.setup()
    from django.conf import settings

    from bench.scratch_db import scratch_database

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-tenants-") as tenants:
        settings.SYNTHORG_TENANT_FILES_DIR = tenants
        for path in args.data:
            with scratch_database("fine_tune"):
                results.append(run_file(path, args, Path(tenants)))
    payload = {
        "command": "python bench/fine_tune.py " + " ".join(argv or sys.argv[1:]),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "cpu_count": os.cpu_count(),
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
