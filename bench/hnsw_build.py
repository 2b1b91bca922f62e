"""How the HNSW graph is built against how wide it is walked, at 10k memories (issue 35).

The 10k search's largest stage is its HNSW walk (``ef_search`` 300 under the per-part width
rule) over the per-embedder index, built with ``m`` 16 and ``ef_construction`` 64
(:mod:`memory.core.vector_indexes`). A graph built with a wider candidate list (or more
links per node) is a better graph: the same recall may come from a narrower walk. This
script measures that trade on the scale benchmark's synthetic 10k memories of one agent
(``bench/scale_search.py``, the rows ``bench/retrieval.py --scale 10000`` searches):

* one index per build variant, each a partial index with the product's expression and
  predicate plus a no-op condition of its own (``doc_length <> -k``) that only its own
  statement names, so the planner walks exactly that graph; the product's index itself is
  dropped first, and the product's settings (``m`` 16, ``ef_construction`` 64) are built
  twice, so the spread between two builds of the same settings is in the same run;
* for each query, every (build, ``ef_search``) pair in an order that rotates per query: the
  walk statement's wall time from the client, ``EXPLAIN (ANALYZE, BUFFERS)`` of it (the
  walk's time, shared buffer hits) and recall@10 against an exact scan;
* each build's time and size.

    python bench/hnsw_build.py --queries 100 --out bench/results/kernel/hnsw_build_10k.json

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

#: (name, m, ef_construction); the first is the product's, built a second time as a control.
BUILDS: list[tuple[str, int, int]] = [
    ("m16 efc64 (today)", 16, 64),
    ("m16 efc64 (rebuilt)", 16, 64),
    ("m16 efc128", 16, 128),
    ("m16 efc200", 16, 200),
    ("m24 efc128", 24, 128),
]
EF_SEARCH = (100, 150, 200, 300)


def _index_sql(tag: int, m: int, efc: int, condition: str, dims: int) -> str:
    return (
        f"CREATE INDEX bench_hnsw_{tag} ON memory_memory USING hnsw "
        f"((embedding::vector({dims})) vector_cosine_ops) "
        f"WITH (m = {m}, ef_construction = {efc}) "
        f"WHERE {condition} AND NOT is_shared AND doc_length <> -{tag}"
    )


def _statement(tag: int, where: str, dims: int) -> str:
    """The dense leg's walk (as ``bench/quantized_walk.py`` sends it) over build ``tag``'s
    graph; params: the query vector, the agent, the depth twice."""
    q = "(SELECT v FROM q)"
    return (
        f"WITH q AS (SELECT %s::vector({dims}) AS v), "
        f"walk AS MATERIALIZED (SELECT m.id, 1 - (m.embedding <=> {q}) AS sim "
        f"FROM memory_memory m WHERE {where} AND m.doc_length <> -{tag} "
        f"ORDER BY (m.embedding::vector({dims})) <=> {q} LIMIT %s) "
        "SELECT id, sim FROM walk ORDER BY sim DESC, id LIMIT %s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=str(ROOT / "bench/results/kernel/hnsw_build_10k.json"))
    args = parser.parse_args()

    from django.db import connection

    from memory.core.vector_indexes import index_name
    from synthorg.db.roles import owner_execute

    out: dict = {
        "command": "bench/hnsw_build.py " + " ".join(sys.argv[1:]),
        "size": args.size,
        "queries": args.queries,
        "depth": DEPTH,
        "k": K,
        "ef_search": list(EF_SEARCH),
        "load_average_start": list(os.getloadavg()),
    }
    with synthetic_agent("hnswbuild", args.size, args.queries) as data:
        owner_execute(f"DROP INDEX {index_name(data.embedder_id, data.dims, shared=False)}")
        builds = []
        for tag, (name, m, efc) in enumerate(BUILDS, start=1):
            t0 = time.perf_counter()
            owner_execute(_index_sql(tag, m, efc, data.condition, data.dims))
            seconds = round(time.perf_counter() - t0, 2)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_relation_size(%s)", [f"bench_hnsw_{tag}"])
                size = cursor.fetchone()[0]
            builds.append(
                {"build": name, "m": m, "ef_construction": efc, "seconds": seconds, "bytes": size}
            )
            log(f"built {name}: {seconds} s, {size / 2**20:.1f} MiB")
        owner_execute("ANALYZE memory_memory")
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            out["pgvector"] = cursor.fetchone()[0]
        out["builds"] = builds
        variants = [
            (f"{name} ef {ef}", _statement(tag, data.where, data.dims), [DEPTH, DEPTH], ef)
            for tag, (name, _, _) in enumerate(BUILDS, start=1)
            for ef in EF_SEARCH
        ]
        measured = measure(data, variants)
        out["load_average_end"] = list(os.getloadavg())
        base = measured[f"{BUILDS[0][0]} ef 300"]
        results = []
        for build, _, _ in BUILDS:
            for ef in EF_SEARCH:
                name = f"{build} ef {ef}"
                m = measured[name]
                results.append(
                    {
                        "variant": name,
                        "build": build,
                        "ef_search": ef,
                        **m.summary(args.queries),
                        "wall_p50_vs_today": ratio(m.wall, base.wall, 50),
                        "walk_p50_vs_today": ratio(m.walk, base.walk, 50),
                    }
                )
                r = results[-1]
                log(
                    f"{name:28s} recall {r['recall_at_10_vs_exact']:.4f} "
                    f"wall p50/p95 {r['statement_wall_ms']['p50']:.2f}/"
                    f"{r['statement_wall_ms']['p95']:.2f} "
                    f"walk p50 {r['walk_ms']['p50'] if r['walk_ms'] else '-'} "
                    f"hits p50 {r['shared_hit_blocks']['p50']} index {r['index_used']}"
                )
        out["variants"] = results
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
