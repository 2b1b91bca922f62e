"""Benchmark: the default 384-dim dense leg on the per-embedder index, and a re-embedding job.

In a throw-away database, seeds N memories (default 10 000) in one company: agent 0 holds
half of them (its dense leg takes the HNSW path), nine agents share the rest (exact path),
each row a synthetic clustered 384-dim unit vector stamped with the default embedder's id.
Then, in one run:

1. **Default embedder, dense leg** (``memory_search(legs=("dense",))``, the query vector
   given, so no model time): p50/p95 of the HNSW path (agent 0) and of the exact path (agent
   1), the dense paths taken, dense recall@10 of the HNSW path against an exact scan, and the
   EXPLAIN of the HNSW statement (it must name the embedder's partial index). The exact
   statement is also timed in its previous shape (``embedder_id = … AND embedding IS NOT
   NULL``, no ``vector_dims`` condition) against the new one, alternating, same rows.
2. **Re-embedding job**: the company switches to an OpenAI-compatible embedder (a local
   test server returning 768-dim vectors), and the job runs to completion (batches of 100):
   index build time, rows/s, the share of wall time spent waiting on the embedder (measured
   by calling the same embedder on the same batches alone), and search p50/p95 at the
   job's half-way point (``degraded == ["reembedding"]``).

    .venv/bin/python bench/reembed.py [--memories 10000] [--queries 100]

Writes ``bench/results/reembed.json``. Figures on the shared 2-core machine are inflated by
whatever else runs; the JSON records the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

BASE = datetime(2026, 1, 1, tzinfo=UTC)
DIMS = 384
WIDE_DIMS = 768


class FixedQueryEmbedder:
    """The default embedder's id with a given query vector (isolates the dense leg)."""

    def __init__(self, embedder_id: str, vector: np.ndarray) -> None:
        self.embedder_id = embedder_id
        self.dims = DIMS
        self.vector = vector

    def embed(self, texts):
        return np.stack([self.vector] * len(texts))

    def embed_one(self, text):
        return self.vector


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def seed(memories: int, rng) -> dict:
    from memory.core.models.memory import Memory
    from persistence.models import Agent, Company
    from synthorg.embedding import MINILM_EMBEDDER_ID

    company = Company.objects.create(name="Bench reembed", slug="bench-reembed")
    agents = Agent.objects.bulk_create(
        [Agent(company=company, name=f"agent-{i}", memory_level="persistent") for i in range(10)]
    )
    centres = rng.standard_normal((50, DIMS))
    started = time.perf_counter()
    batch = 2000
    for start in range(0, memories, batch):
        count = min(batch, memories - start)
        picks = rng.integers(0, len(centres), size=count)
        vectors = centres[picks] + 0.6 * rng.standard_normal((count, DIMS))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        rows = []
        for offset, vector in enumerate(vectors):
            i = start + offset
            at = BASE + timedelta(minutes=i)
            agent = agents[0] if i % 2 == 0 else agents[1 + (i // 2) % 9]
            rows.append(
                Memory(
                    company=company,
                    agent=agent,
                    category="episodic",
                    content=f"Memory {i}: service {i % 97} deployed on node {i % 13}",
                    created_at=at,
                    updated_at=at,
                    embedding=vector.tolist(),
                    embedder_id=MINILM_EMBEDDER_ID,
                    embedding_status="ready",
                )
            )
        Memory.objects.bulk_create(rows)
        print(f"  seeded {start + count}/{memories} memories", file=sys.stderr)
    from synthorg.db.roles import owner_execute

    owner_execute("ANALYZE memory_memory")  # the app role may not
    return {
        "company": company,
        "agents": agents,
        "centres": centres,
        "seed_s": time.perf_counter() - started,
    }


def query_vectors(centres, rng, count: int) -> list[np.ndarray]:
    out = []
    for _ in range(count):
        v = centres[rng.integers(0, len(centres))] + 0.6 * rng.standard_normal(DIMS)
        out.append((v / np.linalg.norm(v)).astype(np.float32))
    return out


def dense_leg(agent, vectors, embedder_id: str) -> dict:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search

    times, paths, results = [], [], []
    for index, vector in enumerate(vectors):
        result = memory_search(
            agent=agent, query=MemoryQuery(text=f"query {index}", limit=10),
            embedder=FixedQueryEmbedder(embedder_id, vector), include_shared=False,
            legs=("dense",),
        )  # fmt: skip
        times.append(result.timings["legs_ms"])  # the dense leg alone (legs=("dense",))
        paths.extend(result.dense_paths)
        results.append([hit.memory.pk for hit in result.hits])
    return {"times": times, "paths": sorted(set(paths)), "results": results}


def exact_top(agent, vector, k: int = 10) -> list:
    from synthorg.retrieval.vectors import vector_literal

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memory_memory WHERE agent_id = %s "
            "ORDER BY 1 - (embedding <=> %s::vector) DESC, id LIMIT %s",
            [agent.pk, vector_literal(vector), k],
        )
        return [row[0] for row in cursor.fetchall()]


def exact_shapes(agent, vectors, embedder_id: str) -> dict:
    """The exact statement before (no width condition) and now, alternating."""
    from memory.core.vector_indexes import dense_condition
    from synthorg.retrieval.vectors import vector_literal

    old_where = "m.agent_id = %s AND m.embedder_id = %s AND m.embedding IS NOT NULL"
    new_where = f"m.agent_id = %s AND {dense_condition(embedder_id, DIMS, escape=True)}"
    timings = {"before": [], "now": []}
    for vector in vectors:
        literal = vector_literal(vector)
        for shape, where, params in (
            ("before", old_where, [agent.pk, embedder_id]),
            ("now", new_where, [agent.pk]),
        ):
            started = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT m.id, 1 - (m.embedding <=> %s::vector) AS s FROM memory_memory m "
                    f"WHERE {where} ORDER BY s DESC, m.id LIMIT 50",
                    [literal, *params],
                )
                cursor.fetchall()
            timings[shape].append((time.perf_counter() - started) * 1000)
    return {
        shape: {"p50_ms": pct(values, 50), "p95_ms": pct(values, 95)}
        for shape, values in timings.items()
    }


def hnsw_plan(embedder_id: str, vector) -> str:
    from memory.core.vector_indexes import dense_condition, dense_distance
    from synthorg.retrieval.vectors import vector_literal

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(
            f"EXPLAIN SELECT m.id FROM memory_memory m "
            f"WHERE {dense_condition(embedder_id, DIMS, escape=True)} "
            f"ORDER BY {dense_distance(DIMS)} LIMIT 50",
            [vector_literal(vector)],
        )
        return " / ".join(row[0].strip()[:120] for row in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()

    from memory.core.models.reembed import ReembedJob
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.core.services.reembed import reembed_job_run
    from persistence.selectors.embedder import company_embedder
    from persistence.services.companies import company_config_set
    from synthorg.embedding import MINILM_EMBEDDER_ID
    from tests.memory.wide_embedders import words_server

    setup_test_environment()
    settings.ORGMEMORY_EMBEDDINGS = False  # memories only: no MiniLM load for org facts
    from bench.scratch_db import scratch_database

    with scratch_database("reembed"):
        rng = np.random.default_rng(11)
        load_start = os.getloadavg()[0]
        data = seed(args.memories, rng)
        company, agents = data["company"], data["agents"]
        queries = query_vectors(data["centres"], rng, args.queries)

        print("dense leg, default embedder …", file=sys.stderr)
        hnsw = dense_leg(agents[0], queries, MINILM_EMBEDDER_ID)
        exact = dense_leg(agents[1], queries, MINILM_EMBEDDER_ID)
        recall = np.mean(
            [
                len(set(got[:10]) & set(exact_top(agents[0], vector))) / 10
                for got, vector in zip(hnsw["results"], queries, strict=True)
            ]
        )
        shapes = exact_shapes(agents[1], queries, MINILM_EMBEDDER_ID)
        plan = hnsw_plan(MINILM_EMBEDDER_ID, queries[0])

        print("re-embedding job …", file=sys.stderr)
        with words_server(WIDE_DIMS) as server:
            # The stand-in embedder runs on loopback: allow-list it as an operator would.
            settings.SYNTHORG_OUTBOUND_ALLOW = "127.0.0.1"
            company_config_set(
                company=company,
                data={
                    "memory": {
                        "embedder": {
                            "model": "bench-wide",
                            "dims": WIDE_DIMS,
                            "base_url": server.base_url,
                        }
                    }
                },
            )
            job = ReembedJob.objects.get(company=company, status="running")
            # Time the embedder calls inside the job (the process-wide instance it uses).
            embedder = company_embedder(company)
            embed_calls = {"s": 0.0}
            plain_embed = embedder.embed

            def timed_embed(texts):
                t0 = time.perf_counter()
                try:
                    return plain_embed(texts)
                finally:
                    embed_calls["s"] += time.perf_counter() - t0

            embedder.embed = timed_embed
            started = time.perf_counter()
            cpu_started = time.process_time()
            index_started = time.perf_counter()
            reembed_job_run(job=job, max_batches=0)  # the index phase only
            index_s = time.perf_counter() - index_started
            half = (job.memories_total // 2 + 99) // 100
            reembed_job_run(job=job, max_batches=half)
            job.refresh_from_db()
            during = []
            degraded = set()
            in_job_before_search = embed_calls["s"]
            for index in range(min(50, args.queries)):
                t0 = time.perf_counter()
                result = memory_search(
                    agent=agents[1], query=MemoryQuery(text=f"service {index} deployed node"),
                    include_shared=False,
                )  # fmt: skip
                during.append((time.perf_counter() - t0) * 1000)
                degraded.update(result.degraded)
            half_done = job.share_done
            embed_calls["s"] = in_job_before_search  # query embeddings are not the job's
            job_paused = time.perf_counter()
            last = None

            def tick(current):
                nonlocal last
                if last is None or current.batches - last >= 10:
                    last = current.batches
                    print(f"  {current.done}/{current.total}", file=sys.stderr)

            reembed_job_run(job=job, on_batch=tick)
            finished = time.perf_counter()
            cpu_s = time.process_time() - cpu_started
            in_job_embed_s = embed_calls["s"]
            embedder.embed = plain_embed
            job.refresh_from_db()
            after = []
            for index in range(min(50, args.queries)):
                t0 = time.perf_counter()
                memory_search(
                    agent=agents[1], query=MemoryQuery(text=f"node {index} deployed service"),
                    include_shared=False,
                )  # fmt: skip
                after.append((time.perf_counter() - t0) * 1000)
            job_s = (job_paused - started) - sum(during) / 1000 + (finished - job_paused)
            # The embedder alone on the same texts, in the same batches.
            texts = [f"Memory {i}: service {i % 97} deployed on node {i % 13}" for i in range(
                args.memories)]  # fmt: skip
            embed_started = time.perf_counter()
            for start in range(0, len(texts), 100):
                embedder.embed(texts[start : start + 100])
            embed_s = time.perf_counter() - embed_started

        result = {
            "command": "bench/reembed.py " + " ".join(f"--{k} {v}" for k, v in vars(args).items()),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "load_avg_start_end": [load_start, os.getloadavg()[0]],
            "memories": args.memories,
            "seed_s": round(data["seed_s"], 1),
            "default_embedder_dense_leg": {
                "hnsw_part": {
                    "rows": args.memories // 2,
                    "paths": hnsw["paths"],
                    "p50_ms": pct(hnsw["times"], 50),
                    "p95_ms": pct(hnsw["times"], 95),
                    "recall_at_10_vs_exact": round(float(recall), 4),
                },
                "exact_part": {
                    "rows": args.memories // 18,
                    "paths": exact["paths"],
                    "p50_ms": pct(exact["times"], 50),
                    "p95_ms": pct(exact["times"], 95),
                },
                "exact_statement_before_vs_now": shapes,
                "hnsw_plan": plan,
            },
            "reembedding_job": {
                "to": f"openai:bench-wide ({WIDE_DIMS} dims, local OpenAI-compatible server)",
                "status": job.status,
                "rows": job.done,
                "batches": job.batches,
                "index_build_s": round(index_s, 3),
                "job_s": round(job_s, 2),
                "rows_per_s": round(job.done / job_s, 1),
                "client_cpu_s": round(cpu_s, 2),
                "embedder_alone_s": round(embed_s, 2),
                "embedder_share_of_job": round(embed_s / job_s, 3),
                "in_job_embedder_s": round(in_job_embed_s, 2),
                "in_job_database_and_overhead_s": round(job_s - in_job_embed_s, 2),
                "database_ms_per_row": round((job_s - in_job_embed_s) * 1000 / job.done, 2),
                "search_during_job": {
                    "share_done": half_done,
                    "degraded": sorted(degraded),
                    "p50_ms": pct(during, 50),
                    "p95_ms": pct(during, 95),
                },
                "search_after_job": {"p50_ms": pct(after, 50), "p95_ms": pct(after, 95)},
            },
        }
        out = ROOT / "bench" / "results" / "reembed.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2), file=sys.stderr)
        print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
