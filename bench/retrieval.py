"""Retrieval quality and latency of the search pipeline (formerly ``manage.py bench_retrieval``).

Three modes, each on throw-away databases (``bench/scratch_db.py``), never the user's:

* LoCoMo recall (default): every conversation of ``--data`` is one agent's memories, stored
  through ``memory_store_batch``; every scored question goes through ``memory_search`` with
  the product's default retrieval config unless ``--fusion``/``--rrf-k``/``--min-relevance``
  say otherwise; recall_any/all@k, per-category recall, search p50/p95 and ingest/s::

    python bench/retrieval.py --data ../shared/bench-data/locomo_dev.json \\
        [--mode hybrid|dense|sparse] [--conversations conv-26,conv-30] [--fusion rrf|linear] \\
        [--rrf-k N] [--no-context] [--max-chunks N] [--context-chars N] \\
        --out bench/results/locomo_dev_hybrid.json

* ``--scale 10000,100000 [--agents 1,10] [--queries 200]``: search latency and filtered
  dense recall@10 against an exact scan on synthetic memories (``bench/scale_search.py``;
  one scratch database per size).
* ``--levers --data …``: context on/off, dense/sparse/RRF k and depth compared on the same
  retrieved legs (``bench/locomo_levers.py``).

Progress goes to stderr; the JSON to ``--out`` (and stdout).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import DEFAULT_KS, log  # noqa: E402


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/retrieval.py",
        description="Benchmark memory retrieval (LoCoMo recall, or --scale latency/recall).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--data", help="LoCoMo-format JSON file (read in place)")
    p.add_argument("--conversations", default="", help="comma-separated sample ids")
    p.add_argument("--mode", choices=["hybrid", "dense", "sparse"], default="hybrid")
    p.add_argument("--k", default=",".join(str(k) for k in DEFAULT_KS), help="recall cut-offs")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument(
        "--no-context",
        action="store_true",
        help="store turns without the previous turn as their context",
    )
    p.add_argument("--rrf-k", type=int, default=None)
    p.add_argument(
        "--fusion",
        choices=["rrf", "linear"],
        default=None,
        help="default: the product default (rrf); linear uses the seeds' linear defaults",
    )
    p.add_argument("--min-relevance", type=float, default=None)
    p.add_argument("--leg-depth", type=int, default=None)
    p.add_argument(
        "--max-chunks",
        type=int,
        default=None,
        help="memory.chunking.max_chunks (default: the product default)",
    )
    p.add_argument(
        "--context-chars",
        type=int,
        default=None,
        help="memory.chunking.context_chars (default: the product default)",
    )
    p.add_argument(
        "--scale",
        default="",
        help="comma-separated company sizes (e.g. 10000,100000): run the scale benchmark",
    )
    p.add_argument("--agents", default="", help="--scale: agents per size, comma-separated")
    p.add_argument("--queries", type=int, default=200, help="--scale: queries per size")
    p.add_argument(
        "--levers",
        action="store_true",
        help="compare context on/off, dense/sparse/RRF k and depth on the same legs",
    )
    p.add_argument("--legs-file", default=None, help="--levers: dump to / reuse from")
    return p


def run(args: argparse.Namespace) -> dict:
    from bench.scratch_db import scratch_database

    if args.scale:
        from bench.scale_search import run_scale

        sizes = [int(s) for s in args.scale.split(",") if s]
        agents = [int(a) for a in args.agents.split(",") if a] or None
        return run_scale(sizes=sizes, agents=agents, queries=args.queries)
    if not args.data:
        raise SystemExit("--data is required (or --scale)")
    if args.levers:
        from bench.locomo_levers import run_levers

        with scratch_database("levers"):
            return run_levers(data=args.data, legs_file=args.legs_file)
    from bench.locomo import run_locomo

    # The product's default retrieval config unless told otherwise, so the figures are what
    # a company created without a config gets.
    retrieval: dict = {}
    if args.fusion == "linear":
        retrieval = {"fusion_strategy": "linear"}
    if args.rrf_k is not None:
        retrieval["rrf_k"] = args.rrf_k
    if args.min_relevance is not None:
        retrieval["min_relevance"] = args.min_relevance
    ks = tuple(sorted({int(k) for k in args.k.split(",") if k}))
    if not ks or min(ks) < 1 or max(ks) > 1000:
        raise SystemExit("--k takes values between 1 and 1000")
    ids = {c.strip() for c in args.conversations.split(",") if c.strip()} or None
    chunking = {}
    if args.max_chunks is not None:
        chunking["max_chunks"] = args.max_chunks
    if args.context_chars is not None:
        chunking["context_chars"] = args.context_chars
    try:
        with scratch_database("retrieval"):
            return run_locomo(
                data=args.data,
                conversation_ids=ids,
                mode=args.mode,
                ks=ks,
                with_context=not args.no_context,
                retrieval=retrieval,
                leg_depth=args.leg_depth,
                chunking=chunking,
            )
    except (OSError, ValueError) as exc:
        raise SystemExit(str(exc)) from exc


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    import django

    django.setup()
    result = run(args)
    result["command"] = "python bench/retrieval.py " + " ".join(argv or sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {out}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
