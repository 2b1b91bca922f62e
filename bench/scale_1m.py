"""One company with a million memories: load, index build, footprint, search latency and
filtered recall per agent-size class, through the product's ``memory_search``.

    python bench/scale_1m.py [--memories 1000000] [--queries 40] [--budget-minutes 150] \\
        [--maintenance-work-mem 6GB] [--parallel-workers 1] [--out bench/results/scale_1m.json]

Everything runs on a throw-away database (``bench/scratch_db.py``), dropped at the end.

Data (synthetic, deterministic): ``--memories`` rows in one company, split over agents of
mixed sizes — at 1M one agent of 400k, three of 100k, 5 % company-shared rows (written by
the first small agent, ``is_shared``), and the remaining quarter over many agents of 1k, 2k,
5k and 10k rows (sizes scale with ``--memories``). Vectors: ``--clusters`` random unit
centres plus Gaussian noise (so nearest neighbours are meaningful, unlike uniform random
vectors), stored under the company's real embedder id. Texts: 8–20 words, three topic words
of the row's cluster plus Zipf-distributed filler, all real English words from the shipped
tokenizer's vocabulary (so BM25 has realistic posting lists and stemming has work).

Phases (each writes the JSON so far, so a run cut short leaves its partial results):

1. **load**: every secondary index of ``memory_memory`` is dropped (definitions saved),
   rows go in with binary ``COPY`` in chunks of 20k (the row triggers — BM25 columns,
   per-statement scope totals — run as always); rows/s.
2. **indexes**: the b-tree/GIN indexes, then the HNSW index(es) with
   ``maintenance_work_mem`` and ``max_parallel_maintenance_workers`` set for the build
   (pgvector builds HNSW in parallel); seconds per index, then ``VACUUM ANALYZE``.
3. **footprint**: ``pg_total_relation_size`` of the table, heap, TOAST and every index.
4. **search**, per size class: ``--queries`` questions over the class's agents, each asked
   (a) as the product asks it — ``memory_search`` hybrid, the real MiniLM query embedding
   included (cold query cache), own + shared rows — for p50/p95 and the dense path the
   engine chose (exact / HNSW with pgvector iterative scans); (b) dense leg only with the
   same query vector, compared with (c) an exact scan of the same visible rows: recall@10.
   Client and PostgreSQL backend CPU per search are recorded next to the wall times.

Progress on stderr. ``--budget-minutes`` stops the search phase early (partial results,
``"complete": false``) when the run would otherwise overrun.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import log, percentile, progress  # noqa: E402

DIMS = 384
NOISE = 0.35
SEED = 11
CHUNK = 20_000
TOKENIZER = ROOT / "synthorg" / "embedding" / "assets" / "tokenizer.json"
QUESTIONS = (
    "What did we decide about {0} and {1}?",
    "When was the last note on {0}?",
    "Who reported the {0} {1} issue?",
    "Anything about {0} near {1} or {2}?",
)


# --- the data set --------------------------------------------------------------------------


def vocabulary() -> list[str]:
    """Whole English words of the shipped tokenizer's vocabulary, in its (frequency-like)
    order: the Zipf rank of each word."""
    vocab = json.loads(TOKENIZER.read_text())["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return [w for w, _ in ordered if re.fullmatch(r"[a-z]{3,12}", w)]


def _human(rows: int) -> str:
    return f"{rows // 1000}k" if rows >= 1000 and rows % 1000 == 0 else str(rows)


def agent_plan(memories: int) -> list[tuple[str, int]]:
    """``(size class, rows)`` per agent: 40 % one agent, 3 × 10 %, 25 % in agents of the
    small classes (10k/5k/2k/1k at 1M, scaled with ``memories``); the remaining 5 % are
    shared rows (not listed). A class is named after its agents' size."""
    scale = memories / 1_000_000
    big, mid = round(0.40 * memories), round(0.10 * memories)
    plan = [(_human(big), big)] + [(_human(mid), mid) for _ in range(3)]
    small = [max(10, round(size * scale)) for size in (10_000, 5_000, 2_000, 1_000)]
    budget = round(0.25 * memories)
    index = 0
    while budget > 0:
        size = small[index % len(small)]
        plan.append((_human(size), min(budget, size)))
        budget -= size
        index += 1
    return plan


class Synthetic:
    """Clustered unit vectors and cluster-topical texts (deterministic).

    ``centres="random"``: random unit centres (mutually orthogonal in 384 dimensions, the
    hard case for HNSW); ``"model"``: each centre is the real embedder's vector of its
    cluster's three topic words, so clusters shade into each other as real topics do (the
    random stream is the same either way: same topics, texts and queries)."""

    def __init__(self, clusters: int, seed: int = SEED, centres: str = "random") -> None:
        self.rng = np.random.default_rng(seed)
        random_centres = self.rng.normal(size=(clusters, DIMS))
        self.words = vocabulary()
        filler = 1.0 / np.arange(1, len(self.words) + 1)
        self.filler_p = filler / filler.sum()
        # Three topic words per cluster, from the middle of the vocabulary (not stop words).
        topical = np.arange(300, len(self.words))
        self.topics = self.rng.choice(topical, size=(clusters, 3))
        if centres == "model":
            from synthorg.embedding import default_embedder

            topics = [" ".join(self.words[t] for t in row) for row in self.topics]
            random_centres = np.asarray(default_embedder().embed(topics), dtype=np.float64)
        elif centres != "random":
            raise ValueError(f"centres must be 'random' or 'model', not {centres!r}")
        norms = np.linalg.norm(random_centres, axis=1, keepdims=True)
        self.centres = (random_centres / norms).astype(np.float32)

    def vectors(self, clusters: np.ndarray) -> np.ndarray:
        noise = self.rng.normal(0, NOISE / np.sqrt(DIMS), size=(len(clusters), DIMS))
        vectors = self.centres[clusters] + noise.astype(np.float32)
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)

    def texts(self, clusters: np.ndarray) -> list[str]:
        n = len(clusters)
        lengths = self.rng.integers(5, 18, size=n)
        filler = self.rng.choice(len(self.words), size=(n, 17), p=self.filler_p)
        words = self.words
        out = []
        for i in range(n):
            topic = [words[t] for t in self.topics[clusters[i]]]
            body = [words[w] for w in filler[i, : lengths[i]]]
            out.append(" ".join([topic[0], *body[:3], topic[1], *body[3:], topic[2]]))
        return out

    def question(self, cluster: int) -> str:
        topic = [self.words[t] for t in self.topics[cluster]]
        template = QUESTIONS[int(self.rng.integers(0, len(QUESTIONS)))]
        return template.format(*topic)


class QueryEmbedder:
    """Runs the real model on the question (so the latency includes a real query embedding)
    and returns a vector from the same cluster model, under the real embedder's id."""

    def __init__(self, real, vector: np.ndarray) -> None:
        self.real = real
        self.vector = vector
        self.embedder_id = real.embedder_id
        self.dims = DIMS

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.real.embed(list(texts))
        return np.stack([self.vector for _ in texts])

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class FixedEmbedder:
    """Returns the given vector without running a model (the dense-only re-run)."""

    def __init__(self, embedder_id: str, vector: np.ndarray) -> None:
        self.embedder_id = embedder_id
        self.dims = DIMS
        self.vector = vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vector for _ in texts])

    def embed_one(self, text: str) -> np.ndarray:
        return self.vector


# --- phases --------------------------------------------------------------------------------


def secondary_indexes() -> list[tuple[str, str]]:
    """``(name, definition)`` of the table's indexes that back no constraint."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.relname, pg_get_indexdef(i.oid)
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
            WHERE x.indrelid = 'memory_memory'::regclass
              AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)
            ORDER BY i.relname
            """
        )
        return [(name, definition) for name, definition in cursor.fetchall()]


#: The columns a synthetic memory row fills (the BM25 columns are the row trigger's) and
#: their binary COPY types.
COPY_COLUMNS = (
    ("id", "uuid"),
    ("company_id", "int8"),
    ("agent_id", "int8"),
    ("namespace", "varchar"),
    ("category", "varchar"),
    ("content", "text"),
    ("context", "text"),
    ("source", "varchar"),
    ("confidence", "float8"),
    ("tags", "varchar[]"),
    ("is_shared", "bool"),
    ("level", "varchar"),
    ("session_id", "varchar"),
    ("scope", "varchar"),
    ("application_count", "int4"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
    ("embedding", "vector"),
    ("embedder_id", "varchar"),
    ("embedding_status", "varchar"),
    ("chunk_count", "int2"),
    ("subject", "varchar"),
)


class MemoryCopy:
    """Binary ``COPY memory_memory`` of synthetic rows on the default connection: one
    statement per ``with`` block; :meth:`row` writes one persistent, ready memory."""

    def __init__(self, cursor, embedder_id: str) -> None:
        from memory.core.models.memory import Memory

        trigger_filled = ("search_vector", "doc_length")
        missing = [
            f.column
            for f in Memory._meta.concrete_fields
            if not f.null and f.column not in dict(COPY_COLUMNS) and f.column not in trigger_filled
        ]
        if missing:  # a column added since: say so rather than fail inside COPY
            raise SystemExit(f"bench: the synthetic rows do not fill the NOT NULL {missing}")
        self.cursor, self.embedder_id = cursor, embedder_id
        names = ", ".join(c for c, _ in COPY_COLUMNS)
        self.sql = f"COPY memory_memory ({names}) FROM STDIN WITH (FORMAT BINARY)"

    def __enter__(self) -> MemoryCopy:
        self._copy = self.cursor.copy(self.sql)
        self.copy = self._copy.__enter__()
        self.copy.set_types([t for _, t in COPY_COLUMNS])
        return self

    def __exit__(self, *exc):
        return self._copy.__exit__(*exc)

    def row(self, *, company_id, agent_id, category, content, shared, created, vector) -> None:
        self.copy.write_row(
            (
                uuid.uuid4(), company_id, agent_id, "default", category, content, "", "", 1.0,
                [], shared, "persistent", "", "", 0, created, created, vector,
                self.embedder_id, "ready", 0, "",
            )
        )  # fmt: skip


def raw_cursor():
    """A psycopg cursor of the default connection with pgvector's types registered."""
    from django.db import connection
    from pgvector.psycopg import register_vector

    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    return raw.cursor()


def copy_rows(company, plan, agents, shared_owner, memories: int, data: Synthetic) -> None:
    """Binary COPY of every row, ``CHUNK`` rows per statement."""
    embedder_id = data_embedder_id(company)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    shared_rows = memories - sum(rows for _, rows in plan)
    work = [(agent, rows, False) for agent, (_, rows) in zip(agents, plan, strict=True)]
    work.append((shared_owner, shared_rows, True))
    # Rows of every agent and the shared rows interleave in the heap, as rows written over
    # time do (an exact scan of one part reads pages scattered over the table).
    owners = np.concatenate(
        [np.full(rows, w, dtype=np.int32) for w, (_, rows, _) in enumerate(work)]
    )
    data.rng.shuffle(owners)
    loaded = 0
    categories = ("episodic", "semantic", "procedural")
    with raw_cursor() as cursor:
        while loaded < memories:
            n = min(CHUNK, memories - loaded)
            clusters = data.rng.integers(0, len(data.centres), size=n)
            vectors = data.vectors(clusters)
            texts = data.texts(clusters)
            with MemoryCopy(cursor, embedder_id) as copy:
                for i in range(n):
                    agent, _, shared = work[owners[loaded + i]]
                    copy.row(
                        company_id=company.pk,
                        agent_id=agent.pk,
                        category=categories[i % 3],
                        content=texts[i],
                        shared=shared,
                        created=start + timedelta(seconds=loaded + i),
                        vector=vectors[i],
                    )
            loaded += n
            progress("load", loaded, memories)


def data_embedder_id(company) -> str:
    from persistence.selectors.embedder import company_embedder

    return company_embedder(company).embedder_id


class BuildProgress:
    """Prints ``pg_stat_progress_create_index`` (phase, tuples done) every ``every`` seconds
    while an index builds, from a connection of its own logged in as the owner (the role
    running the build, so the view shows its details)."""

    def __init__(self, name: str, every: float = 20.0) -> None:
        self.name, self.every = name, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> BuildProgress:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _watch(self) -> None:
        import psycopg
        from django.db import connection

        from synthorg.db.roles import owner_overrides

        fields = {**connection.settings_dict, **(owner_overrides() or {})}
        started = time.perf_counter()
        try:
            with psycopg.connect(
                dbname=fields["NAME"],
                user=fields["USER"],
                password=fields["PASSWORD"] or None,
                host=fields["HOST"] or None,
                port=fields["PORT"] or None,
                autocommit=True,
            ) as watcher:
                while not self.stop.wait(self.every):
                    row = watcher.execute(
                        "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total "
                        "FROM pg_stat_progress_create_index WHERE datname = current_database()"
                    ).fetchone()
                    if row:
                        phase, done, total, blocks, blocks_total = row
                        log(
                            f"  {self.name}: {phase}, tuples {done}/{total}, blocks "
                            f"{blocks}/{blocks_total} ({time.perf_counter() - started:.0f} s)"
                        )
        except psycopg.Error as exc:  # progress is a nicety: the build goes on without it
            log(f"  {self.name}: no progress view ({exc})")


def build_indexes(saved, *, work_mem: str, workers: int) -> dict[str, float]:
    from synthorg.db.roles import owner_execute

    seconds: dict[str, float] = {}
    ordered = sorted(saved, key=lambda item: "hnsw" in item[1].lower())  # HNSW last
    for position, (name, definition) in enumerate(ordered, start=1):
        log(f"index {position}/{len(ordered)}: {name} …")
        started = time.perf_counter()
        with BuildProgress(name):
            owner_execute(
                f"SET maintenance_work_mem = '{work_mem}'",
                f"SET max_parallel_maintenance_workers = {workers}",
                definition,
                "RESET maintenance_work_mem",
                "RESET max_parallel_maintenance_workers",
            )
        seconds[name] = round(time.perf_counter() - started, 1)
        log(f"index {name}: {seconds[name]} s")
    return seconds


def footprint() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT pg_total_relation_size('memory_memory'), pg_relation_size('memory_memory'),
                   pg_total_relation_size('memory_memory') - pg_relation_size('memory_memory')
                     - pg_indexes_size('memory_memory'),
                   pg_indexes_size('memory_memory')
            """
        )
        total, heap, toast, indexes = cursor.fetchone()
        cursor.execute(
            """
            SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x
            JOIN pg_class i ON i.oid = x.indexrelid
            WHERE x.indrelid = 'memory_memory'::regclass ORDER BY 2 DESC
            """
        )
        per_index = dict(cursor.fetchall())
        cursor.execute("SELECT pg_database_size(current_database())")
        database = cursor.fetchone()[0]
    return {
        "table_total_bytes": total,
        "heap_bytes": heap,
        "toast_and_maps_bytes": toast,
        "indexes_bytes": indexes,
        "per_index_bytes": per_index,
        "database_bytes": database,
    }


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a local process (None when the server is not on this machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def exact_top(agent, vector_literal_: str, embedder_id: str, k: int) -> list:
    """Exact nearest ``k`` among the rows ``memory_search`` sees for the agent (own private
    rows and the company's shared rows), without any index (``+ 0``)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            "SELECT m.id FROM memory_memory m WHERE m.company_id = %s AND m.embedder_id = %s "
            "AND ((m.agent_id = %s AND NOT m.is_shared) OR m.is_shared) "
            "ORDER BY (m.embedding <=> %s::vector) + 0, m.id LIMIT %s",
            [agent.company_id, embedder_id, agent.pk, vector_literal_, k],
        )
        return [row[0] for row in cursor.fetchall()]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "mean": round(float(np.mean(values)), 2) if values else 0.0,
    }


def _with_first_walk(ef_search: int, search):
    """Run ``search()`` with the dense leg's first HNSW walk at ``ef_search``."""
    import importlib

    module = importlib.import_module("memory.core.selectors.search.dense")
    saved = module.HNSW_EF_SEARCH_FIRST
    module.HNSW_EF_SEARCH_FIRST = ef_search
    try:
        return search()
    finally:
        module.HNSW_EF_SEARCH_FIRST = saved


#: The dense leg's rule before migration 0022 (``--baseline``): one HNSW index over private
#: and shared rows, so the company's shared rows (5 % of it) were scanned exactly.
PREVIOUS_RULE = "shared part scanned exactly (one index over all rows, before memory 0022)"


def _with_previous_rule(search):
    """Run ``search()`` with every shared part scanned exactly, as before the shared rows had
    an HNSW index of their own."""
    from memory.core.selectors.search import dense, legs

    choose = legs.choose_paths

    def previous(index_rows, part_rows, *, depth, index_ready=lambda part: True):
        parts = choose(index_rows, part_rows, depth=depth, index_ready=index_ready)
        return [dense.EXACT if i > 0 else path for i, path in enumerate(parts)]

    legs.choose_paths = previous
    try:
        return search()
    finally:
        legs.choose_paths = choose


def walk_settings(table_rows: int, team, shared_rows: int) -> dict:
    """The dense leg's paths and walk settings for a class's agents (own + shared part) under
    the current rule, as the product computes them from the rows."""
    from memory.core.selectors.search import dense
    from memory.core.selectors.search.pipeline import MIN_LEG_DEPTH

    rows = [team[0].rows, shared_rows]
    # each part's share of the index it walks: private rows', shared rows'
    index_rows = [table_rows - shared_rows, shared_rows]
    paths = dense.choose_paths(index_rows, rows, depth=MIN_LEG_DEPTH)
    settings = (
        dense.hnsw_settings(MIN_LEG_DEPTH, True, index_rows=index_rows, part_rows=rows, paths=paths)
        if dense.HNSW in paths
        else {}
    )
    return {"paths": paths, "settings": settings}


def search_class(
    label,
    team,
    data: Synthetic,
    real,
    queries: int,
    deadline: float,
    ef_lever: int = 0,
    baseline: bool = False,
    table_rows: int = 0,
    shared_rows: int = 0,
) -> dict:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from synthorg.embedding import query_embedding_cache
    from synthorg.retrieval.vectors import vector_literal

    pid = _backend_pid()
    total_ms, dense_ms, client_cpu, db_cpu, recalls, wide_recalls = [], [], [], [], [], []
    base_ms, base_recalls, base_db_cpu, dense_db_cpu = [], [], [], []
    base_paths: dict[str, int] = {}
    stages: dict[str, list[float]] = {}
    paths: dict[str, int] = {}
    dense_only_paths: dict[str, int] = {}
    asked = 0
    for q in range(queries):
        if time.monotonic() > deadline:
            log(f"{label}: time budget reached after {asked} queries")
            break
        agent = team[q % len(team)]
        cluster = int(data.rng.integers(0, len(data.centres)))
        vector = data.vectors(np.array([cluster]))[0]
        text = data.question(cluster)
        query_embedding_cache.clear()  # cold: every query pays its embedding
        cpu0, db0 = time.process_time(), _cpu_seconds(pid)
        t0 = time.perf_counter()
        result = memory_search(
            agent=agent,
            query=MemoryQuery(text=text, limit=10),
            embedder=QueryEmbedder(real, vector),
        )
        total_ms.append((time.perf_counter() - t0) * 1000)
        client_cpu.append((time.process_time() - cpu0) * 1000)
        db1 = _cpu_seconds(pid)
        if db0 is not None and db1 is not None:
            db_cpu.append((db1 - db0) * 1000)
        for stage, value in result.timings.items():
            stages.setdefault(stage, []).append(value)
        for part, path in zip(("own", "shared"), result.dense_paths, strict=False):
            paths[f"{part}:{path}"] = paths.get(f"{part}:{path}", 0) + 1
        query_embedding_cache.clear()

        def dense_run(ms, cpu, seen, previous=False, agent=agent, text=text, vector=vector):
            """The dense leg alone (under the previous rule, else the current one): its time,
            backend CPU and paths recorded; its top 10 returned."""
            db0 = _cpu_seconds(pid)
            t0 = time.perf_counter()
            search = lambda: memory_search(  # noqa: E731
                agent=agent,
                query=MemoryQuery(text=text, limit=10),
                embedder=FixedEmbedder(real.embedder_id, vector),
                legs=("dense",),
            )
            result = _with_previous_rule(search) if previous else search()
            ms.append((time.perf_counter() - t0) * 1000)
            db1 = _cpu_seconds(pid)
            if db0 is not None and db1 is not None:
                cpu.append((db1 - db0) * 1000)
            for part, path in zip(("own", "shared"), result.dense_paths, strict=False):
                seen[f"{part}:{path}"] = seen.get(f"{part}:{path}", 0) + 1
            return [hit.memory.pk for hit in result.hits]

        top = dense_run(dense_ms, dense_db_cpu, dense_only_paths)
        exact = exact_top(agent, vector_literal(vector), real.embedder_id, 10)
        recalls.append(len(set(top) & set(exact)) / max(1, len(exact)))
        if baseline:
            # The same dense leg under the previous rule, on the same query (before/after
            # within one run).
            before = dense_run(base_ms, base_db_cpu, base_paths, previous=True)
            base_recalls.append(len(set(before) & set(exact)) / max(1, len(exact)))
        if ef_lever:
            # The same dense leg with the first HNSW walk as wide as pgvector allows: tells a
            # walk that missed the query's neighbourhood from one cut short by its width.
            wide = _with_first_walk(
                ef_lever,
                lambda agent=agent, text=text, vector=vector: memory_search(
                    agent=agent,
                    query=MemoryQuery(text=text, limit=10),
                    embedder=FixedEmbedder(real.embedder_id, vector),
                    legs=("dense",),
                ),
            )
            wide_top = [hit.memory.pk for hit in wide.hits]
            wide_recalls.append(len(set(wide_top) & set(exact)) / max(1, len(exact)))
        asked += 1
        progress(f"search {label}", asked, queries)
    return {
        "agents_in_class": len(team),
        "rows_per_agent": sorted({a.rows for a in team}),
        "queries": asked,
        "search_ms_hybrid_including_query_embedding": summary(total_ms),
        "stage_ms_p50": {stage: round(percentile(v, 50), 2) for stage, v in stages.items()},
        "stage_ms_p95": {stage: round(percentile(v, 95), 2) for stage, v in stages.items()},
        "dense_paths_per_part": paths,
        "dense_only_search_ms": summary(dense_ms),
        "dense_only_paths_per_part": dense_only_paths,
        "rule": walk_settings(table_rows, team, shared_rows) if table_rows else None,
        "postgres_backend_cpu_ms_per_dense_only_search": (
            summary(dense_db_cpu) if dense_db_cpu else None
        ),
        "client_cpu_ms_per_hybrid_search": summary(client_cpu),
        "postgres_backend_cpu_ms_per_hybrid_search": summary(db_cpu) if db_cpu else None,
        "dense_recall_at_10_vs_exact": round(float(np.mean(recalls)), 4) if recalls else None,
        "dense_recall_at_10_min": round(float(np.min(recalls)), 2) if recalls else None,
        "queries_with_recall_below_0_9": sum(1 for r in recalls if r < 0.9),
        "baseline": (
            {
                "rule": PREVIOUS_RULE,
                "dense_only_search_ms": summary(base_ms),
                "postgres_backend_cpu_ms_per_dense_only_search": (
                    summary(base_db_cpu) if base_db_cpu else None
                ),
                "dense_paths_per_part": base_paths,
                "dense_recall_at_10_vs_exact": round(float(np.mean(base_recalls)), 4),
                "dense_recall_at_10_min": round(float(np.min(base_recalls)), 2),
                "queries_with_recall_below_0_9": sum(1 for r in base_recalls if r < 0.9),
            }
            if base_recalls
            else None
        ),
        "lever_first_walk_ef_search": ef_lever or None,
        "dense_recall_at_10_with_lever": (
            round(float(np.mean(wide_recalls)), 4) if wide_recalls else None
        ),
        "queries_with_recall_below_0_9_with_lever": (
            sum(1 for r in wide_recalls if r < 0.9) if wide_recalls else None
        ),
    }


def server_settings() -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            # current_setting: the value with its unit ("6026MB"; setting || unit gave
            # "7713288kB" for 771328 pages of 8kB)
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
            "('shared_buffers', 'work_mem', 'effective_cache_size', 'max_parallel_workers', "
            "'max_parallel_maintenance_workers', 'max_worker_processes', 'server_version')"
        )
        found = dict(cursor.fetchall())
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        found["pgvector"] = cursor.fetchone()[0]
    return found


ENGINE_CONSTANTS = (
    "EXACT_SCAN_MAX_ROWS",
    "HNSW_MIN_SHARE",
    "PART_EXACT_MAX_ROWS",
    "NARROW_PART_EXACT_MAX_ROWS",
    "HNSW_EF_SEARCH_FIRST",
    "HNSW_COVERAGE",
    "HNSW_EF_SEARCH",
    "HNSW_ITERATIVE_SCAN",
    "HNSW_MAX_SCAN_TUPLES",
    "HNSW_SCAN_COVERAGE",
)


def engine_constants() -> dict:
    """The dense leg's path-choice constants, wherever the search package keeps them."""
    import importlib

    for name in ("memory.core.selectors.search.dense", "memory.core.selectors.search"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found = {c: getattr(module, c) for c in ENGINE_CONSTANTS if hasattr(module, c)}
        if found:
            return found
    return {}


def run(args, report: dict, write) -> None:
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute
    from synthorg.embedding import default_embedder

    started_run = time.monotonic()
    deadline = started_run + args.budget_minutes * 60
    data = Synthetic(args.clusters, seed=args.seed, centres=args.centres)
    plan = agent_plan(args.memories)
    company = company_create(name="Scale 1M", slug="scale-1m", config={})
    agents = []
    for index, (label, rows) in enumerate(plan):
        agent = agent_create(company=company, name=f"{label}-{index}", memory_level="persistent")
        agent.size_class, agent.rows = label, rows
        agents.append(agent)
    shared_owner = agents[4]  # the first small agent writes the company's shared rows
    report["data"] = {
        "memories": args.memories,
        "agents": len(agents),
        "agents_per_class": {
            label: sum(1 for a in agents if a.size_class == label)
            for label in dict.fromkeys(a.size_class for a in agents)
        },
        "shared_rows": args.memories - sum(rows for _, rows in plan),
        "clusters": args.clusters,
        "seed": args.seed,
        "centres": args.centres,
        "noise": NOISE,
        "dims": DIMS,
        "embedder_id": data_embedder_id(company),
        "vocabulary_words": len(data.words),
    }
    report["server"] = server_settings()
    report["engine_constants"] = engine_constants()
    write()

    saved = secondary_indexes()
    log(f"dropping {len(saved)} secondary indexes for the load: {[n for n, _ in saved]}")
    owner_execute(*(f'DROP INDEX IF EXISTS "{name}"' for name, _ in saved))
    started = time.perf_counter()
    copy_rows(company, plan, agents, shared_owner, args.memories, data)
    load_s = time.perf_counter() - started
    report["load"] = {
        "seconds": round(load_s, 1),
        "rows_per_second": round(args.memories / load_s),
        "method": f"binary COPY, {CHUNK} rows per statement, row triggers on, "
        "secondary indexes dropped",
    }
    log(f"loaded {args.memories} rows in {load_s:.0f} s ({args.memories / load_s:.0f}/s)")
    write()

    started = time.perf_counter()
    per_index = build_indexes(
        saved, work_mem=args.maintenance_work_mem, workers=args.parallel_workers
    )
    index_s = time.perf_counter() - started
    log("VACUUM ANALYZE memory_memory …")
    started = time.perf_counter()
    owner_execute("VACUUM ANALYZE memory_memory")
    vacuum_s = time.perf_counter() - started
    hnsw = {name: s for name, s in per_index.items() if "hnsw" in dict(saved)[name].lower()}
    report["indexes"] = {
        "seconds_total": round(index_s, 1),
        "seconds_per_index": per_index,
        "hnsw_seconds": hnsw,
        "hnsw_definitions": [d for _, d in saved if "hnsw" in d.lower()],
        "maintenance_work_mem": args.maintenance_work_mem,
        "max_parallel_maintenance_workers": args.parallel_workers,
        "vacuum_analyze_seconds": round(vacuum_s, 1),
    }
    report["footprint"] = footprint()
    log(f"footprint: {report['footprint']}")
    write()

    if args.sweep:
        from bench.scale_sweep import sweep

        report["sweep"] = sweep(
            agents, shared_owner, args.memories, data, args.sweep, args.sweep_ef,
            pid=_backend_pid(), cpu=_cpu_seconds, percentile=percentile,
            embedder_id=data_embedder_id(company), dims=DIMS,
        )  # fmt: skip
        log(f"sweep: {json.dumps(report['sweep'])}")
        write()
        if args.sweep_only:
            report["complete"] = True
            return

    real = default_embedder()
    real.warm_up()
    report["search"] = {}
    classes = list(dict.fromkeys(a.size_class for a in agents))
    for position, label in enumerate(classes):
        team = [a for a in agents if a.size_class == label]
        # Each remaining class gets an equal share of the remaining time.
        share = (deadline - time.monotonic()) / (len(classes) - position)
        report["search"][label] = search_class(
            label, team, data, real, args.queries, time.monotonic() + share, args.ef_lever,
            baseline=args.baseline, table_rows=args.memories,
            shared_rows=report["data"]["shared_rows"],
        )  # fmt: skip
        log(f"{label}: {json.dumps(report['search'][label])}")
        write()
    report["complete"] = all(row["queries"] == args.queries for row in report["search"].values())


def markdown(report: dict) -> str:
    """The README's table of a result file (``--markdown FILE``)."""

    def mb(value: int) -> str:
        return f"{value / 2**20:,.0f} MiB"

    lines = []
    data, load, indexes = report.get("data", {}), report.get("load"), report.get("indexes")
    if load:
        lines.append(
            f"- load: {data['memories']:,} rows in {load['seconds']:,} s "
            f"(**{load['rows_per_second']:,} rows/s**; {load['method']})"
        )
    if indexes:
        hnsw = ", ".join(f"{s:,} s" for s in indexes["hnsw_seconds"].values())
        lines.append(
            f"- indexes: {indexes['seconds_total']:,} s in all, **HNSW {hnsw}** "
            f"(maintenance_work_mem {indexes['maintenance_work_mem']}, "
            f"{indexes['max_parallel_maintenance_workers']} parallel worker(s) + leader); "
            f"VACUUM ANALYZE {indexes['vacuum_analyze_seconds']} s"
        )
    if report.get("footprint"):
        f = report["footprint"]
        hnsw_bytes = sum(v for k, v in f["per_index_bytes"].items() if "emb" in k)
        lines.append(
            f"- footprint: table + indexes **{mb(f['table_total_bytes'])}** (heap "
            f"{mb(f['heap_bytes'])}, indexes {mb(f['indexes_bytes'])} of which HNSW "
            f"{mb(hnsw_bytes)}); database {mb(f['database_bytes'])}"
        )
    if report.get("search"):
        lines += [
            "",
            "| agent size | agents | queries | hybrid p50 / p95 ms | dense-only p50 / p95 ms "
            "| dense path (own / shared part) | recall@10 vs exact (min) "
            "| CPU ms/search client + postgres |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for label, row in report["search"].items():
            hybrid = row["search_ms_hybrid_including_query_embedding"]
            dense = row["dense_only_search_ms"]
            db = row["postgres_backend_cpu_ms_per_hybrid_search"] or {"mean": "?"}
            paths = ", ".join(f"{k} {v}" for k, v in sorted(row["dense_paths_per_part"].items()))
            lines.append(
                f"| {label} | {row['agents_in_class']} | {row['queries']} | {hybrid['p50']} / "
                f"{hybrid['p95']} | {dense['p50']} / {dense['p95']} | {paths} | "
                f"{row['dense_recall_at_10_vs_exact']} ({row['dense_recall_at_10_min']}) | "
                f"{row['client_cpu_ms_per_hybrid_search']['mean']} + {db['mean']} |"
            )
    lines.append(
        f"\n(load average {report.get('load_average')}, complete: {report.get('complete')})"
    )
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    """Recall@10 vs exact and search p50/p95 per agent-size class (and the previous rule's,
    when the run measured it) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    search = report.get("search") or {}
    labels = list(search)
    x = np.arange(len(labels))
    before = [search[c].get("baseline") for c in labels]
    has_before = all(before) and bool(labels)
    figure, (recall_ax, hybrid_ax, dense_ax) = plt.subplots(1, 3, figsize=(14, 4.2))
    width = 0.38 if has_before else 0.6
    if has_before:
        bars = recall_ax.bar(
            x - width / 2, [b["dense_recall_at_10_vs_exact"] for b in before], width,
            label="previous rule", color="#a0aec0",
        )  # fmt: skip
        recall_ax.bar_label(bars, fmt="%.3f", fontsize=7)
    bars = recall_ax.bar(
        x + (width / 2 if has_before else 0),
        [search[c]["dense_recall_at_10_vs_exact"] for c in labels], width,
        label="per-part width rule", color="#2b6cb0",
    )  # fmt: skip
    recall_ax.bar_label(bars, fmt="%.3f", fontsize=7)
    recall_ax.axhline(0.95, color="#c53030", linestyle="--", linewidth=1, label="target 0.95")
    recall_ax.set_ylim(0, 1.08)
    recall_ax.set_title("dense recall@10 vs exact scan", fontsize=9)
    recall_ax.legend(fontsize=7, loc="lower left")

    def latency(axis, key, title, base_key=None):
        p50 = [search[c][key]["p50"] for c in labels]
        p95 = [search[c][key]["p95"] for c in labels]
        if base_key and has_before:
            axis.bar(x - width / 2, [b[base_key]["p50"] for b in before], width,
                     color="#a0aec0", label="previous rule p50")  # fmt: skip
            axis.scatter(x - width / 2, [b[base_key]["p95"] for b in before], marker="_",
                         s=200, color="#4a5568", label="previous rule p95")  # fmt: skip
            offset = width / 2
        else:
            offset = 0
        axis.bar(x + offset, p50, width, color="#2b6cb0", label="p50")
        axis.scatter(x + offset, p95, marker="_", s=200, color="#1a365d", label="p95")
        axis.set_title(title, fontsize=9)
        axis.set_ylabel("ms", fontsize=8)
        axis.legend(fontsize=7)

    latency(hybrid_ax, "search_ms_hybrid_including_query_embedding",
            "hybrid memory_search (query embedding included) ms")  # fmt: skip
    latency(dense_ax, "dense_only_search_ms", "dense leg only ms", "dense_only_search_ms")
    for axis in (recall_ax, hybrid_ax, dense_ax):
        axis.set_xticks(x, labels, fontsize=8)
        axis.set_xlabel("agent size class", fontsize=8)
    data = report.get("data", {})
    figure.suptitle(
        f"{data.get('memories', 0):,} memories in one company (seed {data.get('seed')}, "
        f"{data.get('clusters')} {data.get('centres', 'random')} clusters), "
        f"load average {report.get('load_average')}, "
        f"complete: {report.get('complete')}",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python bench/scale_1m.py",
        description="Load, index, footprint, search latency and recall at 1M memories in one "
        "company (synthetic vectors, real texts), on a throw-away database.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--memories", type=int, default=1_000_000)
    p.add_argument("--clusters", type=int, default=4000, help="vector cluster centres")
    p.add_argument("--queries", type=int, default=40, help="queries per agent-size class")
    p.add_argument("--maintenance-work-mem", default="6GB", help="for the index builds")
    p.add_argument(
        "--parallel-workers",
        type=int,
        default=1,
        help="max_parallel_maintenance_workers for the builds (leader + N processes)",
    )
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=150,
        help="stop the search phase early (partial results) once the run is this old",
    )
    p.add_argument(
        "--ef-lever",
        type=int,
        default=0,
        help="also run each dense leg with the first HNSW walk at this ef_search (recall lever)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=SEED,
        help=f"data and query seed ({SEED} evaluates; choose constants on another, e.g. 101)",
    )
    p.add_argument(
        "--centres",
        choices=("random", "model"),
        default="random",
        help="cluster centres: random unit vectors, or the real embedder's vectors of each "
        "cluster's topic words (clusters that shade into each other)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="also run each dense leg under the previous rule (the company's shared part "
        "scanned exactly, as before memory 0022) on the same query: before/after within one run",
    )
    p.add_argument(
        "--sweep",
        type=int,
        default=0,
        metavar="QUERIES",
        help="before the search phase, measure each part (own per class, shared) exact vs "
        "walked at each --sweep-ef, QUERIES queries each (bench/scale_sweep.py)",
    )
    p.add_argument(
        "--sweep-ef", type=lambda v: [int(x) for x in v.split(",")], default=[200, 400, 700, 1000]
    )
    p.add_argument("--sweep-only", action="store_true", help="stop after the sweep")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale_1m.json"))
    p.add_argument(
        "--png",
        metavar="FILE",
        help="draw the PNG of a result file (next to it) and exit (no run)",
    )
    p.add_argument(
        "--markdown",
        metavar="FILE",
        help="print the README table of a result file and exit (no run)",
    )
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return
    if args.png:
        source = Path(args.png)
        plot(json.loads(source.read_text()), source.with_suffix(".png"))
        log(f"wrote {source.with_suffix('.png')}")
        return
    import django

    django.setup()
    from bench.scratch_db import scratch_database

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "benchmark": "scale_1m",
        "command": "python bench/scale_1m.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "complete": False,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    def write() -> None:
        report["load_average"] = [round(x, 2) for x in os.getloadavg()]
        report["written_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        out.write_text(json.dumps(report, indent=2) + "\n")

    try:
        with scratch_database("scale_1m"):
            run(args, report, write)
    finally:
        write()
        log(f"wrote {out} (complete: {report['complete']})")
    if report.get("search"):
        plot(report, out.with_suffix(".png"))
        log(f"wrote {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
