"""Retrieval levers judged per fold and per question category on both dev splits.

``run``: every conversation of ``--data`` is ingested once (the product's default config,
turns with the previous turn as context, as ``bench/locomo.py`` does) and every scored
question is asked through ``memory_search`` once per variant — the baseline (every lever
off) and each lever alone — with the question's date as the anchor of its time words
(LongMemEval's ``question_date``; for LoCoMo, whose questions carry none, the conversation's
last session). recall_any/all@10 per variant, overall, per fold (:mod:`bench.folds`) and per
category::

    python bench/fold_levers.py run --data ../shared/bench-data/locomo_dev.json \\
        --out bench/results/fold_levers_locomo.json
    python bench/fold_levers.py run --data ../shared/bench-data/longmemeval_dev.json \\
        --out bench/results/fold_levers_longmemeval.json

``verdict``: a lever is *kept* only if, on both splits, it wins or ties the baseline on every
fold (any@10 and all@10 each) and wins in total (the sum of any@10 + all@10 hits over both
splits)::

    python bench/fold_levers.py verdict bench/results/fold_levers_locomo.json \\
        bench/results/fold_levers_longmemeval.json --out bench/results/fold_levers_verdict.json

The results hold counts and ids, never the data's text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.folds import assign_folds  # noqa: E402
from bench.locomo import (  # noqa: E402
    load_conversations,
    log,
    parse_session_date,
    percentile,
    progress,
    store_turns,
)

K = 10
#: every lever off: what each lever is compared with
BASELINE = {"time_window_legs": False, "latest_boost": 0.0, "session_spread": 0.0}
VARIANTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "time_window_legs": {"time_window_legs": True},
    "latest_boost_0.2": {"latest_boost": 0.2},
    "latest_boost_0.5": {"latest_boost": 0.5},
    "session_spread_0.3": {"session_spread": 0.3},
    "session_spread_0.1": {"session_spread": 0.1},
}


def question_anchors(data: str) -> dict[str, list]:
    """``sample_id`` → each scored question's anchor date (its own, else the last session's)."""
    from bench.locomo import SCORED_CATEGORIES

    anchors: dict[str, list] = {}
    for sample in json.loads(Path(data).read_text()):
        conv = sample["conversation"]
        index = 1
        while f"session_{index + 1}_date_time" in conv:
            index += 1
        last = parse_session_date(conv[f"session_{index}_date_time"])
        anchors[sample["sample_id"]] = [
            parse_session_date(q["question_date"]) if q.get("question_date") else last
            for q in sample["qa"]
            if q.get("category") in SCORED_CATEGORIES
        ]
    return anchors


def run(*, data: str, variants: dict[str, dict], ids: set[str] | None) -> dict[str, Any]:
    import django

    django.setup()
    from bench.scratch_db import scratch_database
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.core.selectors.search import sparse as sparse_module
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.company_config.memory import MemoryRetrievalConfig
    from synthorg.db.roles import owner_execute

    folds = assign_folds(data)
    anchors = question_anchors(data)
    configs = {
        name: MemoryRetrievalConfig.model_validate(BASELINE | overrides)
        for name, overrides in variants.items()
    }
    questions: list[dict] = []
    search_ms: dict[str, list[float]] = defaultdict(list)
    tag = uuid.uuid4().hex[:6]
    with scratch_database("fold_levers"):
        for conv in load_conversations(data, ids=ids):
            company = company_create(
                name=f"folds {conv.sample_id} {tag}", slug=f"folds-{conv.sample_id}-{tag}".lower()
            )
            agent = agent_create(company=company, name="folds", memory_level="persistent")
            stored = store_turns(agent, conv.turns, label=f"{conv.sample_id} ingest")
            owner_execute("ANALYZE memory_memory")
            sparse_module._lexeme_stats = (float("-inf"), {})
            for position, qa in enumerate(conv.questions):
                evidence = [stored.get(e) for e in qa.get("evidence") or []]
                if not evidence:
                    continue
                wanted = {e for e in evidence if e is not None}
                row: dict[str, Any] = {
                    "conversation": conv.sample_id,
                    "fold": folds[conv.sample_id],
                    "category": int(qa["category"]),
                    "question": position,
                }
                for name, config in configs.items():
                    started = time.perf_counter()
                    hits = memory_search(
                        agent=agent,
                        query=MemoryQuery(text=str(qa["question"]), limit=20),
                        config=config,
                        anchor_time=anchors[conv.sample_id][position],
                    ).hits
                    search_ms[name].append((time.perf_counter() - started) * 1000)
                    top = {hit.memory.pk for hit in hits[:K]}
                    row[name] = [
                        int(bool(wanted & top)),
                        int(len(wanted) == len(evidence) and wanted <= top),
                    ]
                questions.append(row)
                if (position + 1) % 50 == 0 or position + 1 == len(conv.questions):
                    progress(f"{conv.sample_id} questions", position + 1, len(conv.questions))
    return {
        "data": Path(data).name,
        "k": K,
        "baseline_config": BASELINE,
        "variants": variants,
        "summary": summarise(questions, list(variants)),
        "search_ms_p95": {n: round(percentile(v, 95), 2) for n, v in search_ms.items()},
        "questions": questions,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _recall(rows: list[dict], name: str) -> dict[str, Any]:
    n = len(rows)
    hits_any = sum(r[name][0] for r in rows)
    hits_all = sum(r[name][1] for r in rows)
    return {
        "questions": n,
        "hits_any": hits_any,
        "hits_all": hits_all,
        "any@10": round(hits_any / n, 4) if n else 0.0,
        "all@10": round(hits_all / n, 4) if n else 0.0,
    }


def summarise(questions: list[dict], names: list[str]) -> dict[str, Any]:
    """Per variant: overall, per fold and per category recall."""
    out: dict[str, Any] = {}
    for name in names:
        by_fold: dict[int, list] = defaultdict(list)
        by_category: dict[int, list] = defaultdict(list)
        for row in questions:
            by_fold[row["fold"]].append(row)
            by_category[row["category"]].append(row)
        out[name] = {
            "total": _recall(questions, name),
            "folds": {str(f): _recall(rows, name) for f, rows in sorted(by_fold.items())},
            "categories": {str(c): _recall(rows, name) for c, rows in sorted(by_category.items())},
        }
    return out


def verdict(results: list[dict]) -> dict[str, Any]:
    """Per lever: its per-fold deltas on each split, whether it lost a fold, the total delta,
    and ``kept``."""
    names = [n for n in results[0]["summary"] if n != "baseline"]
    out: dict[str, Any] = {}
    for name in names:
        lost = False
        total = 0
        splits = {}
        for result in results:
            base, lever = result["summary"]["baseline"], result["summary"][name]
            deltas = {}
            for fold, rec in lever["folds"].items():
                b = base["folds"][fold]
                d_any, d_all = rec["hits_any"] - b["hits_any"], rec["hits_all"] - b["hits_all"]
                deltas[fold] = [d_any, d_all]
                lost = lost or d_any < 0 or d_all < 0
            d_total = [
                lever["total"]["hits_any"] - base["total"]["hits_any"],
                lever["total"]["hits_all"] - base["total"]["hits_all"],
            ]
            total += sum(d_total)
            splits[result["data"]] = {
                "fold_deltas_any_all": deltas,
                "total_delta_any_all": d_total,
                "baseline": [base["total"]["any@10"], base["total"]["all@10"]],
                "lever": [lever["total"]["any@10"], lever["total"]["all@10"]],
            }
        out[name] = {
            "splits": splits,
            "lost_a_fold": lost,
            "total_delta_hits": total,
            "kept": not lost and total > 0,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--conversations", default="")
    r.add_argument("--variants", default="", help="comma-separated subset of the variants")
    r.add_argument("--out", required=True)
    v = sub.add_parser("verdict")
    v.add_argument("results", nargs="+")
    v.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "run":
        chosen = [n for n in args.variants.split(",") if n] or list(VARIANTS)
        variants = {"baseline": {}} | {n: VARIANTS[n] for n in chosen}
        ids = {c for c in args.conversations.split(",") if c} or None
        result = run(data=args.data, variants=variants, ids=ids)
    else:
        result = {
            "results": [Path(p).name for p in args.results],
            "levers": verdict([json.loads(Path(p).read_text()) for p in args.results]),
        }
    result["command"] = "python bench/fold_levers.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {out}")
    summary = result.get("summary") or result.get("levers")
    print(json.dumps({n: s.get("total", s.get("kept")) for n, s in summary.items()}, indent=1))


if __name__ == "__main__":
    main()
