"""The harness of the dense-walk experiments at 10k memories (``bench/quantized_walk.py``,
``bench/hnsw_build.py``): the scale benchmark's synthetic memories of one agent in a
throw-away database, and every variant's walk statement timed per query, in an order that
rotates per query, with ``EXPLAIN (ANALYZE, BUFFERS)`` of it and its recall@10 against an
exact scan."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from bench.locomo import log, percentile
from bench.scratch_db import scratch_database

DEPTH = 50
K = 10


def spread(values: list[float]) -> dict:
    return {
        "p50": round(percentile(values, 50), 3),
        "p95": round(percentile(values, 95), 3),
        "mean": round(float(np.mean(values)), 3),
    }


def walk_settings(cursor, ef: int) -> None:
    """The dense leg's walk settings at width ``ef`` (transaction-local)."""
    cursor.execute(
        "SELECT set_config('hnsw.ef_search', %s, true), "
        "set_config('hnsw.iterative_scan', 'strict_order', true), "
        "set_config('hnsw.max_scan_tuples', '20000', true), "
        "set_config('enable_sort', 'off', true)",
        [str(min(1000, max(ef, DEPTH)))],
    )


def walk_node(plan: dict) -> dict | None:
    if plan.get("Node Type") == "Index Scan":
        return plan
    for child in plan.get("Plans", []):
        found = walk_node(child)
        if found:
            return found
    return None


@dataclass
class Synthetic:
    """The loaded agent, the index predicate of the benchmark's embedder (for a
    ``CREATE INDEX``), the dense leg's WHERE (``%s``: the agent) and the query vectors."""

    agent: object
    condition: str
    where: str
    queries: list[np.ndarray]
    embedder_id: str
    dims: int


@contextmanager
def synthetic_agent(name: str, size: int, queries: int) -> Iterator[Synthetic]:
    """``size`` synthetic memories of one agent in a scratch database, and ``queries`` + 5
    query vectors (the first 5 warm up)."""
    from bench.scale_search import BENCH_EMBEDDER_ID, CLUSTERS, DIMS, SEED, WORDS, _load, _noisy
    from memory.core.vector_indexes import dense_condition
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    with scratch_database(name):
        company = company_create(name=f"{name} 10k", slug=f"{name}-10k", config={})
        agent = agent_create(company=company, name=f"{name}-agent", memory_level="persistent")
        log(f"loading {size} memories")
        _load(company, [agent], size, centres, vocab, rng)
        condition = dense_condition(BENCH_EMBEDDER_ID, DIMS, alias="memory_memory").replace(
            "memory_memory.", ""
        )
        where = (
            f"m.agent_id = %s AND NOT m.is_shared AND "
            f"{dense_condition(BENCH_EMBEDDER_ID, DIMS, escape=True)}"
        )
        vectors = [
            _noisy(centres[rng.integers(0, CLUSTERS, size=1)], rng)[0] for _ in range(queries + 5)
        ]
        yield Synthetic(agent, condition, where, vectors, BENCH_EMBEDDER_ID, DIMS)


@dataclass
class Measured:
    """Per variant: statement wall ms, EXPLAIN planning / execution / walk ms, shared buffer
    hits, true top-10 rows found, and the index the walk used."""

    wall: list[float] = field(default_factory=list)
    planning: list[float] = field(default_factory=list)
    execution: list[float] = field(default_factory=list)
    walk: list[float] = field(default_factory=list)
    hits: list[float] = field(default_factory=list)
    found: int = 0
    index_used: str | None = None

    def summary(self, queries: int) -> dict:
        return {
            "index_used": self.index_used,
            "statement_wall_ms": spread(self.wall),
            "planning_ms": spread(self.planning),
            "execution_ms": spread(self.execution),
            "walk_ms": spread(self.walk) if self.walk else None,
            "shared_hit_blocks": spread(self.hits),
            "recall_at_10_vs_exact": round(self.found / (K * queries), 4),
        }


#: A variant: its name, its statement, its parameters after the query vector and the agent,
#: and its walk width.
Variant = tuple[str, str, list, int]


def measure(data: Synthetic, variants: list[Variant]) -> dict[str, Measured]:
    """Every variant's statement (params: the query vector, the agent, then its own) for
    every query, the order rotating per query; the first 5 queries warm up."""
    from django.db import connection, transaction

    from synthorg.retrieval.vectors import vector_literal

    exact_sql = (
        "SELECT m.id FROM memory_memory m WHERE m.agent_id = %s AND NOT m.is_shared "
        "AND m.embedder_id = %s ORDER BY (m.embedding <=> %s::vector) + 0, m.id LIMIT %s"
    )
    measured = {name: Measured() for name, _, _, _ in variants}
    log(f"{len(variants)} variants x {len(data.queries) - 5} queries (+5 warm-up)")
    for q_index, vector in enumerate(data.queries):
        literal = vector_literal(vector)
        with connection.cursor() as cursor:
            cursor.execute(exact_sql, [data.agent.pk, data.embedder_id, literal, K])
            truth = {row[0] for row in cursor.fetchall()}
        shift = q_index % len(variants)
        for name, sql, extra, ef in variants[shift:] + variants[:shift]:
            params = [literal, data.agent.pk, *extra]
            with transaction.atomic(), connection.cursor() as cursor:
                walk_settings(cursor, ef)
                t0 = time.perf_counter()
                cursor.execute(sql, params)
                rows = cursor.fetchall()
                elapsed = (time.perf_counter() - t0) * 1000
            with transaction.atomic(), connection.cursor() as cursor:
                walk_settings(cursor, ef)
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
                explain = cursor.fetchone()[0][0]
            if q_index < 5:
                continue  # warm-up
            m = measured[name]
            m.wall.append(elapsed)
            m.found += len(truth & {row[0] for row in rows[:K]})
            m.planning.append(explain["Planning Time"])
            m.execution.append(explain["Execution Time"])
            m.hits.append(explain["Plan"].get("Shared Hit Blocks", 0))
            node = walk_node(explain["Plan"])
            if node:
                m.walk.append(node["Actual Total Time"])
                m.index_used = node.get("Index Name", "")
    return measured


def ratio(values: list[float], base: list[float], q: float) -> float | None:
    """``values``' percentile ``q`` over ``base``'s (None when either is empty)."""
    if not values or not base:
        return None
    return round(percentile(values, q) / percentile(base, q), 3)
