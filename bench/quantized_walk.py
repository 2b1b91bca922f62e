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

from bench.locomo import log  # noqa: E402
from bench.walk_variants import DEPTH, K, measure, ratio, synthetic_agent  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "bench/results/kernel/quantized_walk_10k.json"))
    args = parser.parse_args()

    from django.db import connection

    from synthorg.db.roles import owner_execute

    out: dict = {
        "command": "bench/quantized_walk.py " + " ".join(sys.argv[1:]),
        "size": args.size,
        "queries": args.queries,
        "depth": DEPTH,
        "k": K,
        "load_average_start": list(os.getloadavg()),
    }
    with synthetic_agent("quantwalk", args.size, args.queries) as data:
        builds = {}
        for kind in ("halfvec", "binary"):
            t0 = time.perf_counter()
            owner_execute(_index_sql(kind, data.condition, data.dims), "ANALYZE memory_memory")
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
        statements = {
            kind: _statement(kind, data.where, data.dims)
            for kind in ("vector", "halfvec", "binary")
        }
        measured = measure(
            data,
            [
                (name, statements[kind], [ef if kind != "vector" else DEPTH, DEPTH], ef)
                for name, kind, ef in VARIANTS
            ],
        )
        out["load_average_end"] = list(os.getloadavg())
        base = measured["vector ef 300 (today)"]
        results = []
        for name, kind, ef in VARIANTS:
            m = measured[name]
            results.append(
                {
                    "variant": name,
                    "index": kind,
                    "candidates": ef,
                    **m.summary(args.queries),
                    "wall_p50_vs_today": ratio(m.wall, base.wall, 50),
                    "wall_p95_vs_today": ratio(m.wall, base.wall, 95),
                    "execution_p50_vs_today": ratio(m.execution, base.execution, 50),
                }
            )
            r = results[-1]
            log(
                f"{name:24s} recall {r['recall_at_10_vs_exact']:.4f} "
                f"wall p50/p95 {r['statement_wall_ms']['p50']:.2f}/"
                f"{r['statement_wall_ms']['p95']:.2f} "
                f"exec p50 {r['execution_ms']['p50']:.2f} "
                f"walk p50 {r['walk_ms']['p50'] if r['walk_ms'] else '-'} "
                f"hits p50 {r['shared_hit_blocks']['p50']} "
                f"index {r['index_used']}"
            )
        out["variants"] = results
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
