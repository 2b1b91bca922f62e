"""Search latency and filtered dense recall with many memories in one company.

Synthetic data: ``size`` memories split evenly across ``agents`` agents of one company, with
clustered unit vectors (``CLUSTERS`` centres plus Gaussian noise, so nearest neighbours are
meaningful, unlike uniform random vectors) and short texts drawn from a Zipf vocabulary (so
BM25 has realistic posting lists). Rows are bulk-loaded with binary COPY (the store service
would spend hours embedding a million texts); the sparse columns are filled by the same
trigger as always.

Each query runs the full ``memory_search`` pipeline for one agent (hybrid, both legs). The
query embedder really runs all-MiniLM-L6-v2 on a question-like text (so the latency includes
a real query embedding) and then returns a synthetic vector from the same cluster model.
Recall@10 compares the dense leg's top 10 with an exact scan of the agent's rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from bench.locomo import log, percentile
from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID

CLUSTERS = 2000
NOISE = 0.35
DIMS = 384
WORDS = 5000
SEED = 7
#: The rows and query vectors are synthetic but carry the default embedder's id, so the
#: product's HNSW index(es) for that embedder serve them as they would real vectors.
BENCH_EMBEDDER_ID = MINILM_EMBEDDER_ID


class BenchQueryEmbedder:
    """Runs the real model on the text (for honest latency), returns a synthetic vector."""

    embedder_id = BENCH_EMBEDDER_ID
    dims = DIMS

    def __init__(self, real, centres: np.ndarray, rng: np.random.Generator) -> None:
        self.real = real
        self.centres = centres
        self.rng = rng

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.real.embed(list(texts))
        picks = self.rng.integers(0, len(self.centres), size=len(texts))
        return _noisy(self.centres[picks], self.rng)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _noisy(centres: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    vectors = centres + rng.normal(0, NOISE / np.sqrt(DIMS), size=centres.shape)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _load(company, agents, per_agent: int, centres, vocab, rng) -> float:
    """Bulk-load without the HNSW index(es), then build them again from their saved
    definitions (far faster than row-by-row inserts into the graph). Returns the index build
    time in seconds."""
    from bench.scale_1m import secondary_indexes
    from synthorg.db.roles import owner_execute

    hnsw = [(name, sql) for name, sql in secondary_indexes() if "hnsw" in sql.lower()]
    # DDL: the owner role's (the app role owns no table)
    owner_execute(*(f'DROP INDEX IF EXISTS "{name}"' for name, _ in hnsw))
    try:
        _copy_rows(company, agents, per_agent, centres, vocab, rng)
    finally:
        started = time.perf_counter()
        owner_execute(
            "SET maintenance_work_mem = '2GB'",
            *(sql for _, sql in hnsw),
            "RESET maintenance_work_mem",
            "ANALYZE memory_memory",
        )
    return time.perf_counter() - started


def _copy_rows(company, agents, per_agent: int, centres, vocab, rng) -> None:
    from bench.scale_1m import MemoryCopy, raw_cursor

    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    zipf /= zipf.sum()
    start = datetime(2025, 1, 1, tzinfo=UTC)
    chunk = 20_000
    with raw_cursor() as cursor:
        for agent in agents:
            loaded = 0
            while loaded < per_agent:
                n = min(chunk, per_agent - loaded)
                vectors = _noisy(centres[rng.integers(0, len(centres), size=n)], rng)
                words = rng.choice(len(vocab), size=(n, 12), p=zipf)
                with MemoryCopy(cursor, BENCH_EMBEDDER_ID) as copy:
                    for i in range(n):
                        copy.row(
                            company_id=company.pk,
                            agent_id=agent.pk,
                            category="episodic",
                            content=" ".join(vocab[w] for w in words[i]),
                            shared=False,
                            created=start + timedelta(minutes=loaded + i),
                            vector=vectors[i],
                        )
                loaded += n
            log(f"  agent {agent.pk}: {per_agent} rows loaded")


def _exact_top(agent, vector: np.ndarray, k: int) -> list:
    from django.db import connection

    from synthorg.retrieval.vectors import vector_literal

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id FROM memory_memory m WHERE m.agent_id = %s AND NOT m.is_shared "
            "AND m.embedder_id = %s ORDER BY (m.embedding <=> %s::vector) + 0, m.id LIMIT %s",
            [agent.pk, BENCH_EMBEDDER_ID, vector_literal(vector), k],
        )
        return [row[0] for row in cursor.fetchall()]


class _RecordingEmbedder(BenchQueryEmbedder):
    last: np.ndarray | None = None

    def embed(self, texts):
        vectors = super().embed(texts)
        self.last = vectors[-1]
        return vectors


def run_scale(
    *, sizes: Sequence[int], agents: Sequence[int] | None, queries: int
) -> dict[str, object]:
    import os

    from bench.scratch_db import scratch_database
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import dense as dense_module
    from memory.core.selectors.search import memory_search
    from memory.core.selectors.search import sparse as sparse_module
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.embedding import default_embedder, query_embedding_cache

    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(CLUSTERS, DIMS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vocab = [f"w{i}" for i in range(WORDS)]
    real = default_embedder()
    real.warm_up()
    questions = [
        "When did Caroline go to the LGBTQ support group?",
        "What did the team decide about the deployment schedule last week?",
        "Which database does the billing service use?",
        "Who owns the onboarding checklist?",
    ]
    runs = []
    for index, size in enumerate(sizes):
        n_agents = agents[index] if agents and index < len(agents) else max(1, size // 10_000)
        per_agent = size // n_agents
        # One throw-away database per size: each size starts from an empty table and index.
        with scratch_database(f"scale_{index}"):
            company = company_create(
                name=f"scale {size}",
                slug=f"scale-{size}",
                config={},  # the product's default retrieval config
            )
            team = [
                agent_create(company=company, name=f"scale-{i}", memory_level="persistent")
                for i in range(n_agents)
            ]
            log(f"size {size}: loading {n_agents} agents × {per_agent}")
            started = time.perf_counter()
            index_s = _load(company, team, per_agent, centres, vocab, rng)
            load_s = time.perf_counter() - started
            log(f"size {size}: loaded in {load_s:.0f}s (HNSW build {index_s:.0f}s)")
            embedder = _RecordingEmbedder(real, centres, rng)
            timings, embed_ms, recalls, paths = [], [], [], {}
            asked: list[tuple] = []
            stages: dict[str, list[float]] = {}
            for q in range(queries):
                agent = team[q % n_agents]
                text = questions[q % len(questions)] + " " + vocab[int(rng.integers(0, 200))]
                t0 = time.perf_counter()
                real.embed_one(text)
                embed_ms.append((time.perf_counter() - t0) * 1000)
                query_embedding_cache.clear()  # cold: every query pays its embedding
                t0 = time.perf_counter()
                result = memory_search(
                    agent=agent,
                    query=MemoryQuery(text=text, limit=10),
                    embedder=embedder,
                    include_shared=False,
                )
                timings.append((time.perf_counter() - t0) * 1000)
                asked.append((agent, text, embedder.last))
                for stage, value in result.timings.items():
                    stages.setdefault(stage, []).append(value)
                for path in result.dense_paths:
                    paths[path] = paths.get(path, 0) + 1
                dense_top = [
                    h.memory.pk
                    for h in sorted(
                        (h for h in result.hits if h.dense_rank is not None),
                        key=lambda h: h.dense_rank,
                    )
                ]
                # the dense leg's own top 10 (hits are fused; re-run dense-only for recall)
                dense_only = memory_search(
                    agent=agent,
                    query=MemoryQuery(text=text, limit=10),
                    embedder=_Fixed(embedder.last),
                    include_shared=False,
                    legs=("dense",),
                )
                dense_top = [h.memory.pk for h in dense_only.hits]
                exact = _exact_top(agent, embedder.last, 10)
                recalls.append(len(set(dense_top) & set(exact)) / max(1, len(exact)))
                if (q + 1) % 50 == 0:
                    log(f"  {q + 1}/{queries} queries")
            levers = _levers(asked, sparse_module)
            runs.append(
                {
                    "levers": levers,
                    "memories": size,
                    "agents": n_agents,
                    "memories_per_agent": per_agent,
                    "dense_paths": paths,
                    "search_ms_including_query_embedding": {
                        "p50": round(percentile(timings, 50), 2),
                        "p95": round(percentile(timings, 95), 2),
                    },
                    "query_embedding_ms": {
                        "p50": round(percentile(embed_ms, 50), 2),
                        "p95": round(percentile(embed_ms, 95), 2),
                    },
                    "stage_ms_p50": {
                        stage: round(percentile(values, 50), 2) for stage, values in stages.items()
                    },
                    "stage_ms_p95": {
                        stage: round(percentile(values, 95), 2) for stage, values in stages.items()
                    },
                    "dense_recall_at_10_vs_exact": round(float(np.mean(recalls)), 4),
                    "load_seconds": round(load_s, 1),
                    "hnsw_build_seconds": round(index_s, 1),
                    "queries": queries,
                }
            )
            log(f"size {size}: {runs[-1]}")
    return {
        "runs": runs,
        "exact_scan_max_rows": dense_module.EXACT_SCAN_MAX_ROWS,
        "hnsw_ef_search": dense_module.HNSW_EF_SEARCH,
        "clusters": CLUSTERS,
        "noise": NOISE,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }


def _levers(asked: list[tuple], sparse_module) -> dict[str, object]:
    """The same queries again, once per lever: the search statement (both legs; the sparse leg
    is one of its CTEs) without common-lexeme pruning,
    and the whole search with the query vector already in the query-embedding cache."""
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from synthorg.embedding import query_embedding_cache

    def run(embedder_for, cold: bool = True) -> tuple[list[float], list[float]]:
        total, sparse = [], []
        for agent, text, vector in asked:
            if cold:
                query_embedding_cache.clear()
            t0 = time.perf_counter()
            result = memory_search(
                agent=agent,
                query=MemoryQuery(text=text, limit=10),
                embedder=embedder_for(vector),
                include_shared=False,
            )
            total.append((time.perf_counter() - t0) * 1000)
            sparse.append(result.timings["legs_ms"])
        return total, sparse

    def summary(values: list[float]) -> dict[str, float]:
        return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}

    log("  levers: BM25 without common-lexeme pruning")
    share = sparse_module.COMMON_LEXEME_SHARE
    sparse_module.COMMON_LEXEME_SHARE = 2.0  # no lexeme is that common: pruning off
    sparse_module._lexeme_stats = (float("-inf"), {})
    try:
        _, unpruned = run(_Fixed)
    finally:
        sparse_module.COMMON_LEXEME_SHARE = share
        sparse_module._lexeme_stats = (float("-inf"), {})
    _, pruned = run(_Fixed)
    log("  levers: warm query-embedding cache")
    query_embedding_cache.clear()
    for _agent, text, vector in asked:  # what the cache holds after a first ask
        query_embedding_cache.embed(_Fixed(vector), text)
    warm, _ = run(_Fixed, cold=False)
    query_embedding_cache.clear()
    return {
        # the one search statement (dense and sparse CTEs), with and without the pruning
        "legs_ms_common_lexeme_pruning": summary(pruned),
        "legs_ms_without_pruning": summary(unpruned),
        "search_ms_query_embedding_cached": summary(warm),
    }


class _Fixed:
    """Returns one given vector (to repeat a query's dense leg alone)."""

    embedder_id = BENCH_EMBEDDER_ID
    dims = DIMS

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector

    def embed(self, texts):
        return np.stack([self.vector for _ in texts])

    def embed_one(self, text):
        return self.vector
