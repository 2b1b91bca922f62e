"""Quantized HNSW walks with an exact re-rank against today's walk, at 10k memories (issue 35).

The 10k search's remaining gap is mostly its HNSW walk (``ef_search`` 300 over the
full-precision ``vector(384)`` index: docs/benchmarks/latency.md). pgvector ≥ 0.8 can walk
a smaller graph and re-rank the candidates by the exact cosine distance of the stored
vectors, in one statement:

* **binary**: an expression index ``(binary_quantize(embedding)::bit(384)) bit_hamming_ops``,
  walked for ``k`` candidates by Hamming distance;
* **halfvec**: ``(embedding::halfvec(384)) halfvec_cosine_ops``, walked for ``k`` candidates
  by the half-precision cosine distance;

each candidate set then re-ranked by ``embedding <=> q`` (full precision) to the leg's depth
(50 for a page of 10). Today's walk (``vector``, the product's settings: ``ef_search`` 300,
iterative ``strict_order``) is measured in the same run at several widths.

On the scale benchmark's synthetic 10k memories of one agent (``bench/scale_search.py``,
the rows ``bench/retrieval.py --scale 10000`` searches), every index built the way the
product builds its per-embedder index (partial on the embedder, the width and the private
rows; ``m`` 16, ``ef_construction`` 64), for each query and each variant, in an order that
rotates per query:

* the statement's wall time from the client (planning and transfer included: each variant
  is planned for its own values, as the product's custom plan is);
* ``EXPLAIN (ANALYZE, BUFFERS)`` of it: planning, execution, shared buffer hits;
* recall@10 of the re-ranked top 10 against an exact scan.

    python bench/quantized_walk.py --queries 100 --out bench/results/kernel/quantized_walk_10k.json

Only same-run ratios mean anything (the machine is shared). Everything runs in a throw-away
database (``bench/scratch_db.py``).
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

import numpy as np  # noqa: E402

from bench.locomo import log, percentile  # noqa: E402
from bench.scratch_db import scratch_database  # noqa: E402

DEPTH = 50
K = 10
#: (name, index kind, candidate count = ef_search). "vector" is today's walk (no re-rank:
#: the walk returns the depth's rows in exact order).
VARIANTS: list[tuple[str, str, int]] = [
    ("vector ef 300 (today)", "vector", 300),
    ("vector ef 200", "vector", 200),
    ("vector ef 100", "vector", 100),
    ("halfvec k 100", "halfvec", 100),
    ("halfvec k 200", "halfvec", 200),
    ("halfvec k 300", "halfvec", 300),
    ("binary k 200", "binary", 200),
    ("binary k 400", "binary", 400),
    ("binary k 800", "binary", 800),
    ("binary k 1000", "binary", 1000),
]


def _spread(values: list[float]) -> dict:
    return {
        "p50": round(percentile(values, 50), 3),
        "p95": round(percentile(values, 95), 3),
        "mean": round(float(np.mean(values)), 3),
    }


def _index_sql(kind: str, condition: str, dims: int) -> str:
    expr, ops = {
        "halfvec": (f"(embedding::halfvec({dims}))", "halfvec_cosine_ops"),
        "binary": (f"(binary_quantize(embedding)::bit({dims}))", "bit_hamming_ops"),
    }[kind]
    return (
        f"CREATE INDEX bench_q_{kind} ON memory_memory USING hnsw ({expr} {ops}) "
        f"WITH (m = 16, ef_construction = 64) WHERE {condition} AND NOT is_shared"
    )


def _statement(kind: str, where: str, dims: int) -> str:
    """The walk (and, for a quantized index, the re-rank) the dense leg would send; params:
    the query vector, the agent, the candidate count, then the depth."""
    q = "(SELECT v FROM q)"
    head = f"WITH q AS (SELECT %s::vector({dims}) AS v), "
    if kind == "vector":
        return (
            head + f"walk AS MATERIALIZED (SELECT m.id, 1 - (m.embedding <=> {q}) AS sim "
            f"FROM memory_memory m WHERE {where} "
            f"ORDER BY (m.embedding::vector({dims})) <=> {q} LIMIT %s) "
            "SELECT id, sim FROM walk ORDER BY sim DESC, id LIMIT %s"
        )
    order = {
        "halfvec": f"(m.embedding::halfvec({dims})) <=> ({q})::halfvec({dims})",
        "binary": (
            f"(binary_quantize(m.embedding)::bit({dims})) <~> binary_quantize({q})::bit({dims})"
        ),
    }[kind]
    return (
        head + f"cand AS MATERIALIZED (SELECT m.id, m.embedding FROM memory_memory m "
        f"WHERE {where} ORDER BY {order} LIMIT %s) "
        f"SELECT id, 1 - (embedding <=> {q}) AS sim FROM cand ORDER BY sim DESC, id LIMIT %s"
    )


def _settings(cursor, ef: int) -> None:
    cursor.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), "
        "set_config('hnsw.iterative_scan', 'strict_order', true), "
        "set_config('hnsw.max_scan_tuples', '20000', true), "
        "set_config('enable_sort', 'off', true)",
        [str(min(1000, max(ef, DEPTH)))],
    )


def _walk_node(plan: dict) -> dict | None:
    if plan.get("Node Type") == "Index Scan":
        return plan
    for child in plan.get("Plans", []):
        found = _walk_node(child)
        if found:
            return found
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "bench/results/kernel/quantized_walk_10k.json"))
    args = parser.parse_args()

    from django.db import connection, transaction

    from bench.scale_search import BENCH_EMBEDDER_ID, CLUSTERS, DIMS, SEED, WORDS, _load, _noisy
    from memory.core.vector_indexes import dense_condition
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute
    from synthorg.retrieval.vectors import vector_literal

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    out: dict = {
        "command": "bench/quantized_walk.py " + " ".join(sys.argv[1:]),
        "size": args.size,
        "queries": args.queries,
        "depth": DEPTH,
        "k": K,
        "load_average_start": list(os.getloadavg()),
    }
    with scratch_database("quantwalk"):
        company = company_create(name="quant 10k", slug="quant-10k", config={})
        agent = agent_create(company=company, name="q10k", memory_level="persistent")
        log(f"loading {args.size} memories")
        _load(company, [agent], args.size, centres, vocab, rng)
        condition = dense_condition(BENCH_EMBEDDER_ID, DIMS, alias="memory_memory").replace(
            "memory_memory.", ""
        )
        builds = {}
        for kind in ("halfvec", "binary"):
            t0 = time.perf_counter()
            owner_execute(_index_sql(kind, condition, DIMS), "ANALYZE memory_memory")
            builds[kind] = round(time.perf_counter() - t0, 2)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.relname, pg_relation_size(c.oid), pg_get_indexdef(c.oid) "
                "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = 'memory_memory'::regclass AND pg_get_indexdef(c.oid) "
                "ILIKE '%%hnsw%%'"
            )
            indexes = [
                {"name": n, "bytes": size, "definition": d} for n, size, d in cursor.fetchall()
            ]
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            out["pgvector"] = cursor.fetchone()[0]
        out["indexes"] = indexes
        out["index_build_s"] = builds
        where = (
            f"m.agent_id = %s AND NOT m.is_shared AND "
            f"{dense_condition(BENCH_EMBEDDER_ID, DIMS, escape=True)}"
        )
        statements = {
            kind: _statement(kind, where, DIMS) for kind in ("vector", "halfvec", "binary")
        }
        exact_sql = (
            "SELECT m.id FROM memory_memory m WHERE m.agent_id = %s AND NOT m.is_shared "
            "AND m.embedder_id = %s ORDER BY (m.embedding <=> %s::vector) + 0, m.id LIMIT %s"
        )
        wall: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        plan_ms: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        exec_ms: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        walk_ms: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        hits: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
        found: dict[str, int] = {name: 0 for name, _, _ in VARIANTS}
        index_used: dict[str, str] = {}
        queries = [
            _noisy(centres[rng.integers(0, CLUSTERS, size=1)], rng)[0]
            for _ in range(args.queries + 5)
        ]
        log(f"{len(VARIANTS)} variants x {args.queries} queries (+5 warm-up)")
        for q_index, vector in enumerate(queries):
            literal = vector_literal(vector)
            with connection.cursor() as cursor:
                cursor.execute(exact_sql, [agent.pk, BENCH_EMBEDDER_ID, literal, K])
                truth = {row[0] for row in cursor.fetchall()}
            shift = q_index % len(VARIANTS)
            for name, kind, ef in VARIANTS[shift:] + VARIANTS[:shift]:
                params = [literal, agent.pk, ef if kind != "vector" else DEPTH, DEPTH]
                with transaction.atomic(), connection.cursor() as cursor:
                    _settings(cursor, ef)
                    t0 = time.perf_counter()
                    cursor.execute(statements[kind], params)
                    rows = cursor.fetchall()
                    elapsed = (time.perf_counter() - t0) * 1000
                with transaction.atomic(), connection.cursor() as cursor:
                    _settings(cursor, ef)
                    cursor.execute(
                        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statements[kind], params
                    )
                    explain = cursor.fetchone()[0][0]
                if q_index < 5:
                    continue  # warm-up
                wall[name].append(elapsed)
                found[name] += len(truth & {row[0] for row in rows[:K]})
                plan_ms[name].append(explain["Planning Time"])
                exec_ms[name].append(explain["Execution Time"])
                hits[name].append(explain["Plan"].get("Shared Hit Blocks", 0))
                node = _walk_node(explain["Plan"])
                if node:
                    walk_ms[name].append(node["Actual Total Time"])
                    index_used[name] = node.get("Index Name", "")
        out["load_average_end"] = list(os.getloadavg())
        base = "vector ef 300 (today)"
        results = []
        for name, kind, ef in VARIANTS:
            results.append(
                {
                    "variant": name,
                    "index": kind,
                    "candidates": ef,
                    "index_used": index_used.get(name),
                    "statement_wall_ms": _spread(wall[name]),
                    "planning_ms": _spread(plan_ms[name]),
                    "execution_ms": _spread(exec_ms[name]),
                    "walk_ms": _spread(walk_ms[name]) if walk_ms[name] else None,
                    "shared_hit_blocks": _spread(hits[name]),
                    "recall_at_10_vs_exact": round(found[name] / (K * args.queries), 4),
                    "wall_p50_vs_today": round(
                        percentile(wall[name], 50) / percentile(wall[base], 50), 3
                    ),
                    "wall_p95_vs_today": round(
                        percentile(wall[name], 95) / percentile(wall[base], 95), 3
                    ),
                    "execution_p50_vs_today": round(
                        percentile(exec_ms[name], 50) / percentile(exec_ms[base], 50), 3
                    ),
                }
            )
            log(
                f"{name:24s} recall {results[-1]['recall_at_10_vs_exact']:.4f} "
                f"wall p50/p95 {results[-1]['statement_wall_ms']['p50']:.2f}/"
                f"{results[-1]['statement_wall_ms']['p95']:.2f} "
                f"exec p50 {results[-1]['execution_ms']['p50']:.2f} "
                f"walk p50 {results[-1]['walk_ms']['p50'] if results[-1]['walk_ms'] else '-'} "
                f"hits p50 {results[-1]['shared_hit_blocks']['p50']} "
                f"index {results[-1]['index_used']}"
            )
        out["variants"] = results
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
