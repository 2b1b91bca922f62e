"""The dense leg on a part of moderate selectivity: exact scan vs HNSW vs iterative HNSW.

Loads ``--memories`` synthetic memories (``bench/scale_search.py``'s clustered vectors, bulk
COPY, then the HNSW index) evenly over ``--agents`` agents of one company, then runs the
same ``--queries`` query vectors through ``memory_search`` (dense leg only, no query
embedding, so only the dense leg is timed) three ways on the same data:

* ``exact``: the part scanned exactly (what a small part gets),
* ``hnsw``: the filtered HNSW walk (ef_search 200, widened to 1000, then the exact scan
  when the walk comes back short) without iterative scans (pgvector < 0.8 behaviour),
* ``hnsw_iterative``: the same with ``hnsw.iterative_scan = strict_order`` (the product).

The three runs of each query are interleaved in a rotating order (no mode gets a warmer
cache). Runs on a throw-away database (``bench/scratch_db.py``). Writes p50/p95 latency,
the dense paths taken and recall@10 against an exact scan.

    .venv/bin/python bench/iterative_scan.py --memories 105000 --agents 5 --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from bench.locomo import log, percentile  # noqa: E402
from bench.scale_search import (  # noqa: E402
    CLUSTERS,
    DIMS,
    SEED,
    WORDS,
    _exact_top,
    _Fixed,
    _load,
    _noisy,
)

MODES = ("exact", "hnsw", "hnsw_iterative")


def run(memories: int, agents: int, queries: int) -> dict:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import dense as search_module
    from memory.core.selectors.search import memory_search
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.embedding import query_embedding_cache

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    tag = uuid.uuid4().hex[:8]
    company = company_create(
        name=f"iterative {tag}",
        slug=f"iterative-{tag}",
        config={"memory": {"retrieval": {"fusion_strategy": "rrf", "min_relevance": 0.0}}},
    )
    per_agent = memories // agents
    team = [
        agent_create(company=company, name=f"it-{i}", memory_level="persistent")
        for i in range(agents)
    ]
    log(f"loading {agents} agents × {per_agent}")
    started = time.perf_counter()
    build_s = _load(company, team, per_agent, centres, vocab, rng)
    load_s = time.perf_counter() - started
    log(f"loaded in {load_s:.0f}s (HNSW build {build_s:.0f}s)")
    vectors = _noisy(centres[rng.integers(0, CLUSTERS, size=queries)], rng)
    exact = [_exact_top(team[q % agents], vectors[q], 10) for q in range(queries)]
    defaults = {
        "PART_EXACT_MAX_ROWS": search_module.PART_EXACT_MAX_ROWS,
        "HNSW_MIN_SHARE": search_module.HNSW_MIN_SHARE,
        "HNSW_ITERATIVE_SCAN": search_module.HNSW_ITERATIVE_SCAN,
        "NARROW_PART_EXACT_MAX_ROWS": search_module.NARROW_PART_EXACT_MAX_ROWS,
    }

    def use(mode: str) -> None:
        forced_exact = mode == "exact"
        search_module.PART_EXACT_MAX_ROWS = (
            10**12 if forced_exact else defaults["PART_EXACT_MAX_ROWS"]
        )
        search_module.HNSW_MIN_SHARE = 2.0 if forced_exact else defaults["HNSW_MIN_SHARE"]
        # the walk modes walk every part the share rule lets walk, however narrow
        search_module.NARROW_PART_EXACT_MAX_ROWS = 10**12 if forced_exact else 0
        search_module.HNSW_ITERATIVE_SCAN = "strict_order" if mode == "hnsw_iterative" else "off"

    timings = {mode: [] for mode in MODES}
    recalls = {mode: [] for mode in MODES}
    paths = {mode: {} for mode in MODES}
    out = {}
    try:
        # Interleaved, in a rotating order per query, so cache warmth favours no mode.
        for q in range(queries):
            for i in range(len(MODES)):
                mode = MODES[(q + i) % len(MODES)]
                use(mode)
                # One text for every query: without this the cache would answer every
                # query after the first with the first query's vector.
                query_embedding_cache.clear()
                t0 = time.perf_counter()
                result = memory_search(
                    agent=team[q % agents],
                    query=MemoryQuery(text="query", limit=10),
                    embedder=_Fixed(vectors[q]),
                    include_shared=False,
                    legs=("dense",),
                )
                timings[mode].append((time.perf_counter() - t0) * 1000)
                for path in result.dense_paths:
                    paths[mode][path] = paths[mode].get(path, 0) + 1
                top = [hit.memory.pk for hit in result.hits]
                recalls[mode].append(len(set(top) & set(exact[q])) / max(1, len(exact[q])))
            if (q + 1) % 25 == 0:
                log(f"  {q + 1}/{queries} queries")
        for mode in MODES:
            out[mode] = {
                "dense_search_ms": {
                    "p50": round(percentile(timings[mode], 50), 2),
                    "p95": round(percentile(timings[mode], 95), 2),
                },
                "dense_paths": paths[mode],
                "recall_at_10_vs_exact": round(float(np.mean(recalls[mode])), 4),
            }
            log(f"{mode}: {out[mode]}")
    finally:
        for name, value in defaults.items():
            setattr(search_module, name, value)
    return {
        "memories": memories,
        "agents": agents,
        "memories_per_agent": per_agent,
        "share_of_table": round(1 / agents, 4),
        "queries": queries,
        "modes": out,
        "load_seconds": round(load_s, 1),
        "hnsw_build_seconds": round(build_s, 1),
        "hnsw_max_scan_tuples": search_module.HNSW_MAX_SCAN_TUPLES,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=105_000)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "iterative_scan.json"))
    args = parser.parse_args()
    from bench.scratch_db import scratch_database

    with scratch_database("iterative_scan"):
        result = run(args.memories, args.agents, args.queries)
    result["command"] = "python bench/iterative_scan.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
