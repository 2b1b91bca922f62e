"""The dense leg's per-part levers at scale (``bench/scale_1m.py --sweep``): for each part a
search walks — one agent's private rows per size class, and the company's shared rows — the
product's own dense CTEs (``memory.core.selectors.search.dense.dense_ctes``) with the path forced:
the exact scan, and the HNSW walk (pgvector iterative scan, ``strict_order``) with its first
walk at each ``--sweep-ef`` width. Per part and variant: recall@10 against the exact scan of
the same part, statement wall time (p50/p95) and PostgreSQL backend CPU per statement, and
how often the walk came back short (the product then runs the exact scan as well).

Used on the dev seed to choose the width rule's constants and the exact/walk line
(``HNSW_COVERAGE``, ``NARROW_PART_EXACT_MAX_ROWS``), never to tune on the evaluation seed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np

from bench.locomo import progress

DEPTH = 50  # the product's leg depth for a page of 10 (pipeline MIN_LEG_DEPTH)
#: Private parts below this share of the table are not swept (the rule scans them exactly).
MIN_SHARE = 0.01


def _statement(part, path: str, embedder_id: str, dims: int) -> tuple[str, list]:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search.dense import dense_ctes
    from memory.core.selectors.search.scope import scope_filters

    filters = scope_filters(MemoryQuery(text="sweep", limit=10), datetime.now(UTC))
    ctes, params, walks = dense_ctes([part], [path], filters, embedder_id, dims, DEPTH)
    walked = f"(SELECT walked FROM ({walks}) AS w)" if walks else "NULL::bigint"
    sql = (
        f"WITH q AS (SELECT %s::vector AS v), {', '.join(ctes)} "
        f"SELECT id, sim, {walked} FROM dense ORDER BY sim DESC, id"
    )
    return sql, params


def _run(sql: str, params: list, vector: str, settings: dict[str, str], pid: int, cpu):
    """``(ids best first, walked rows, wall ms, backend CPU ms)`` of one statement, with
    ``settings`` transaction-local (set in a round trip of their own, not timed)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for name, value in settings.items():
            cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        cpu0 = cpu(pid)
        started = time.perf_counter()
        cursor.execute(sql, [vector, *params])
        rows = cursor.fetchall()
        wall = (time.perf_counter() - started) * 1000
        cpu1 = cpu(pid)
    backend = (cpu1 - cpu0) * 1000 if cpu0 is not None and cpu1 is not None else None
    walked = rows[0][2] if rows else 0
    return [row[0] for row in rows], walked, wall, backend


def sweep_part(
    name: str,
    make_part,
    *,
    rows: int,
    table_rows: int,
    data,
    queries: int,
    efs: list[int],
    embedder_id: str,
    dims: int,
    pid: int,
    cpu,
    percentile,
) -> dict:
    """Exact scan vs walks of one part over ``queries`` random clusters' query vectors;
    ``make_part(q)`` gives the part (``memory.core.selectors.search.scope.Part``) of query ``q``;
    ``table_rows``: the rows of the HNSW index it walks (private rows', or shared rows')."""
    from memory.core.selectors.search import dense
    from synthorg.retrieval.vectors import vector_literal

    share = rows / table_rows
    walk_base = {
        "enable_sort": "off",
        "hnsw.iterative_scan": dense.HNSW_ITERATIVE_SCAN,
        "hnsw.max_scan_tuples": str(dense.max_scan_tuples(DEPTH, [share])),
    }
    exact_ms, exact_cpu = [], []
    walks: dict[int, dict[str, list]] = {
        ef: {"recall": [], "ms": [], "cpu": [], "short": []} for ef in efs
    }
    for q in range(queries):
        part = make_part(q)
        cluster = int(data.rng.integers(0, len(data.centres)))
        vector = vector_literal(data.vectors(np.array([cluster]))[0])
        sql, params = _statement(part, dense.EXACT, embedder_id, dims)
        truth, _, wall, backend = _run(sql, params, vector, {}, pid, cpu)
        exact_ms.append(wall)
        if backend is not None:
            exact_cpu.append(backend)
        top = set(truth[:10])
        sql, params = _statement(part, dense.HNSW, embedder_id, dims)
        for ef in efs:
            found, walked, wall, backend = _run(
                sql, params, vector, {**walk_base, "hnsw.ef_search": str(ef)}, pid, cpu
            )
            row = walks[ef]
            row["recall"].append(len(top & set(found[:10])) / max(1, len(top)))
            row["ms"].append(wall)
            row["short"].append(walked is not None and walked < DEPTH)
            if backend is not None:
                row["cpu"].append(backend)
        progress(f"sweep {name}", q + 1, queries)

    def timing(values: list[float]) -> dict:
        return {
            "p50": round(percentile(values, 50), 2),
            "p95": round(percentile(values, 95), 2),
            "mean": round(float(np.mean(values)), 2) if values else 0.0,
        }

    return {
        "rows": rows,
        "share_of_table": round(share, 4),
        "rule_width": round(dense.needed_width(DEPTH, share), 1),
        "rule_ef_search": dense.ef_search(DEPTH, True, [share]),
        "rule_path": dense.choose_paths(table_rows, [rows], depth=DEPTH)[0],
        "queries": queries,
        "exact": {
            "ms": timing(exact_ms),
            "postgres_cpu_ms_mean": round(float(np.mean(exact_cpu)), 2) if exact_cpu else None,
        },
        "walk_by_first_ef_search": {
            str(ef): {
                "recall_at_10_vs_exact": round(float(np.mean(row["recall"])), 4),
                "recall_min": round(float(np.min(row["recall"])), 2),
                "queries_below_0_9": sum(1 for r in row["recall"] if r < 0.9),
                "ms": timing(row["ms"]),
                "postgres_cpu_ms_mean": (
                    round(float(np.mean(row["cpu"])), 2) if row["cpu"] else None
                ),
                "walks_short": sum(row["short"]),
            }
            for ef, row in walks.items()
        },
    }


def sweep(
    agents, shared_owner, table_rows: int, data, queries: int, efs: list[int], *, pid, cpu,
    percentile, embedder_id: str, dims: int,
) -> dict:  # fmt: skip
    """Every size class's private part (its agents in turn) and the company's shared part,
    each against the index it walks (private rows', shared rows')."""
    from memory.core.selectors.search.scope import private_part, shared_part

    shared_rows = table_rows - sum(a.rows for a in agents)
    private_rows = table_rows - shared_rows
    out: dict[str, dict] = {}
    classes = list(dict.fromkeys(a.size_class for a in agents))
    for label in classes:
        team = [a for a in agents if a.size_class == label]
        rows = int(np.mean([a.rows for a in team]))
        if rows < MIN_SHARE * private_rows:
            continue  # walks of tiny parts resume until max_scan_tuples: slow, never chosen

        def own(q, team=team):
            agent = team[q % len(team)]
            return private_part(agent.company_id, agent.pk)

        out[f"own {label}"] = sweep_part(
            f"own {label}", own, rows=rows, table_rows=private_rows, data=data,
            queries=queries, efs=efs, embedder_id=embedder_id, dims=dims, pid=pid, cpu=cpu,
            percentile=percentile,
        )  # fmt: skip
    company = shared_owner.company_id
    out["shared"] = sweep_part(
        "shared", lambda q: shared_part(company),
        rows=shared_rows, table_rows=shared_rows, data=data, queries=queries,
        efs=efs, embedder_id=embedder_id, dims=dims, pid=pid, cpu=cpu, percentile=percentile,
    )  # fmt: skip
    return out
