"""Running the legs: embed the query once, then both legs in one SQL statement.

Two round trips. The query is embedded on a worker thread while the request thread runs a
planning one: the query's lexemes, the row counts that choose each scope part's dense path
(and the sparse leg's common lexemes), and a running re-embedding job toward the query's
embedder. Then the search statement itself, which holds the dense CTEs (:mod:`.dense`), the
sparse CTEs (:mod:`.sparse`) and, for every candidate either leg found, its cosine
similarity to the query (for rows of the query's embedder) and, for linear fusion, its
``created_at`` and ``is_shared`` (what the linear ranking needs). The statement is the
connection's prepared statement; its settings (the plan cache mode, and what an HNSW walk
needs) go in the same psycopg pipeline as transaction-local settings, so they cost no round
trip and end with the statement's implicit transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory.core.extensions import (
    QueryAdapterUnavailable,
    QueryVectorAdapter,
    query_vector_adapters,
)
from memory.core.retrieval.speakers import SPEAKER_TAG_PREFIX
from memory.core.selectors.reembed import reembedding_progress, reembedding_sql
from memory.core.selectors.search.dense import (
    HNSW,
    HNSW_EXACT,
    HNSW_ITERATIVE_SCAN,
    QUERY_VECTOR,
    ScopeRows,
    choose_paths,
    chunk_similarity,
    dense_ctes,
    hnsw_settings,
    scope_rows,
    scope_rows_sql,
)
from memory.core.selectors.search.scope import Part
from memory.core.selectors.search.sparse import sparse_ctes
from memory.core.vector_indexes import dense_condition, vector_index_ready
from persistence.models import Company
from persistence.selectors.embedder import company_embedder
from synthorg.company_config import CompanyConfig
from synthorg.db.prepared import execute_prepared
from synthorg.db.replicas import read_connection
from synthorg.embedding import Embedder, EmbeddingError, embed_query, query_embedding_cache
from synthorg.errors import DomainError
from synthorg.retrieval.lexemes import QUERY_LEXEMES_EXPR
from synthorg.retrieval.vectors import vector_literal

logger = logging.getLogger(__name__)

DEGRADED_DENSE = "dense"
#: The company's active query adapter could not be loaded: the base query vector was used.
DEGRADED_ADAPTER = "adapter"
#: Threads that embed queries while the request thread runs the planning round trip (a
#: request waits for its own embedding; more threads only serve concurrent requests).
EMBEDDING_THREADS = 4


#: The time-window leg compares at most this many of a scope part's newest rows in the
#: window with the query (a bound on its cost when the window holds most of the store).
WINDOW_ROWS_MAX = 2000


_embedding_pool: ThreadPoolExecutor | None = None
_embedding_pool_lock = threading.Lock()


def _start_embedding(embedder: Embedder, text: str) -> Callable[[], tuple[np.ndarray, float]]:
    """Start embedding the query; the returned call waits for ``(vector, embed_ms)`` and
    raises what the embedder raised. A cached vector costs no thread hand-off."""
    global _embedding_pool
    cached = query_embedding_cache.cached(embedder.embedder_id, text)
    if cached is not None:
        return lambda: (cached, 0.0)

    def run() -> tuple[np.ndarray, float]:
        started = time.perf_counter()
        return embed_query(embedder, text), (time.perf_counter() - started) * 1000

    with _embedding_pool_lock:
        if _embedding_pool is None:
            _embedding_pool = ThreadPoolExecutor(
                max_workers=EMBEDDING_THREADS, thread_name_prefix="query-embedding"
            )
    return _embedding_pool.submit(run).result


@dataclass
class Legs:
    dense: list[tuple]  # (id, similarity) best first
    sparse: list[tuple]  # (id, bm25) best first
    degraded: list[str]
    dense_paths: list[str]
    #: the query's embedder and width (vectors of another width are never compared), and
    #: whether the query was embedded (its pgvector literal)
    embedder_id: str = ""
    dims: int = 0
    vector: str | None = None
    #: id → cosine similarity to the query, for every candidate with a comparable vector
    similarity: dict = field(default_factory=dict)
    #: id → (created_at, is_shared), for every candidate (``with_meta`` only: what the
    #: linear ranking needs; RRF ranks by the legs' orders alone)
    meta: dict = field(default_factory=dict)
    #: id → its ``speaker:`` tags, for every candidate that has any (``with_tags`` only:
    #: what the speaker feature needs)
    tags: dict = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: the running re-embedding job's progress toward the query's embedder (None if none)
    reembedding: dict | None = None
    #: the company's query adapter (checkpoint id) the dense leg's query vector went
    #: through (None: the base embedder's vector)
    adapter: str | None = None
    #: the time-window leg: (id, similarity) best first, of the candidates created inside
    #: the query's time window (``window`` only; empty when the window holds none)
    window: list[tuple] = field(default_factory=list)


def run_legs(
    *,
    company: Company,
    parts: Sequence[Part],
    filters: Part,
    text: str,
    embedder: Embedder | None,
    depth: int,
    use_dense: bool = True,
    use_sparse: bool = True,
    with_meta: bool = True,
    adapter_config: CompanyConfig | None = None,
    with_tags: bool = False,
    window: tuple[datetime, datetime] | None = None,
) -> Legs:
    """Both legs for ``text``. ``adapter_config`` (the company's config): the query vector
    goes through the query adapter a registered :class:`~memory.core.extensions.
    QueryVectorAdapter` chooses for the company and its embedder, if any, and the embedder
    (when none is given) is the one it names.
    ``with_tags``: each candidate's ``speaker:`` tags too (:attr:`Legs.tags`).
    ``window`` (``[start, end)`` on ``created_at``): a third leg in the same statement, the
    rows of the scope created inside it ranked by similarity (:attr:`Legs.window`; needs the
    query vector)."""
    degraded: list[str] = []
    vector: np.ndarray | None = None
    embedder_id = ""
    timings: dict[str, float] = {"embed_ms": 0.0}
    clock = time.perf_counter()
    embedding: Callable[[], tuple[np.ndarray, float]] | None = None
    reembed: tuple[int, str, int] | None = None
    if use_dense:
        try:
            embedder = embedder or company_embedder(company, adapter_config)
            embedder_id = embedder.embedder_id
            embedding = _start_embedding(embedder, text)
        except DomainError as exc:
            logger.warning("query embedding failed for company %s: %s", company.pk, exc)
            degraded.append(DEGRADED_DENSE)
        else:
            reembed = (company.pk, embedder_id, embedder.dims)

    # The planning round trip runs while the query is being embedded (onnxruntime and a
    # remote embedder's socket wait both release the GIL).
    hooks = query_vector_adapters() if adapter_config is not None else ()
    lexemes, counts, job, chosen = _plan(
        text, parts, sparse=use_sparse, reembed=reembed, adapters=hooks, config=adapter_config
    )
    timings["plan_ms"] = (time.perf_counter() - clock) * 1000
    if embedding is not None:
        try:
            vector, timings["embed_ms"] = embedding()
        except (EmbeddingError, DomainError) as exc:
            logger.warning("query embedding failed for company %s: %s", company.pk, exc)
            degraded.append(DEGRADED_DENSE)
    timings["embed_wait_ms"] = (time.perf_counter() - clock) * 1000 - timings["plan_ms"]
    dims = int(vector.shape[0]) if vector is not None else 0
    adapter = None
    if vector is not None and reembed is not None and reembed[2] == dims:
        for hook, adapter_id in chosen:
            try:
                vector = hook.apply(adapter_id, vector)
                adapter = str(adapter_id)
            except QueryAdapterUnavailable as exc:
                logger.warning("query adapter skipped for company %s: %s", company.pk, exc)
                degraded.append(DEGRADED_ADAPTER)
    paths = []
    if vector is not None and counts is not None:
        paths = choose_paths(
            counts.index_rows(parts), counts.parts, depth=depth,
            index_ready=lambda i: vector_index_ready(embedder_id, dims, shared=parts[i].shared),
        )  # fmt: skip

    clock = time.perf_counter()
    legs = Legs(
        dense=[], sparse=[], degraded=degraded, dense_paths=[], timings=timings,
        embedder_id=embedder_id if vector is not None else "", dims=dims,
        vector=vector_literal(vector) if vector is not None else None, adapter=adapter,
    )  # fmt: skip
    if vector is not None and reembed is not None and reembed[2] == dims:
        legs.reembedding = reembedding_progress(job)
    if vector is not None or lexemes:
        _run_statement(
            legs, parts=parts, filters=filters, paths=paths, lexemes=lexemes, depth=depth,
            with_meta=with_meta, scope_share=_scope_share(counts), counts=counts,
            with_tags=with_tags, window=window,
        )  # fmt: skip
    timings["legs_ms"] = (time.perf_counter() - clock) * 1000
    return legs


def _plan(
    text: str,
    parts: Sequence[Part],
    *,
    sparse: bool,
    reembed: tuple[int, str, int] | None,
    adapters: Sequence[QueryVectorAdapter] = (),
    config: CompanyConfig | None = None,
) -> tuple[list[str], ScopeRows | None, dict | None, list[tuple[QueryVectorAdapter, object]]]:
    """In one round trip: the query's lexemes (when the sparse leg runs); the live rows of
    the table (private and shared) and of each part (path choice; common lexemes); and,
    when the dense leg runs
    (``reembed``: company id, query embedder id, dims), the running re-embedding job toward
    the query's embedder and the query adapter each of ``adapters`` chooses for it (the
    pairs whose choice is not NULL)."""
    exprs: list[str] = []
    params: list = []
    if sparse:
        exprs.append(QUERY_LEXEMES_EXPR)
        params.append(text)
    if sparse or reembed is not None:
        count_exprs, count_params = scope_rows_sql(parts)
        exprs += count_exprs
        params += count_params
    if reembed is not None:
        job_expr, job_params = reembedding_sql(*reembed)
        exprs.append(job_expr)
        params += job_params
    planned: list[QueryVectorAdapter] = []
    for hook in adapters if reembed is not None and config is not None else ():
        assert reembed is not None and config is not None  # the loop's own condition
        plan = hook.plan(config, *reembed)
        if plan is not None:
            planned.append(hook)
            exprs.append(plan[0])
            params += plan[1]
    if not exprs:
        return [], None, None, []
    # Prepared (planning this small statement cost more than running it); PostgreSQL's
    # own plan cache mode keeps a generic plan.
    row = list(execute_prepared(read_connection(), f"SELECT {', '.join(exprs)}", params)[0])
    lexemes = list(row.pop(0) or []) if sparse else []
    choices = row[len(row) - len(planned) :] if planned else []
    del row[len(row) - len(planned) :]
    job = row.pop() if reembed is not None else None
    chosen = [(hook, choice) for hook, choice in zip(planned, choices, strict=True) if choice]
    return lexemes, scope_rows(row) if row else None, job, chosen


def _scope_share(counts: ScopeRows | None) -> float:
    """The scope's live rows over the table's."""
    if counts is None or counts.table <= 0:
        return 1.0
    return min(1.0, sum(counts.parts) / counts.table)


def _run_statement(
    legs: Legs,
    *,
    parts: Sequence[Part],
    filters: Part,
    paths: list[str],
    lexemes: list[str],
    depth: int,
    with_meta: bool,
    scope_share: float = 1.0,
    counts: ScopeRows | None = None,
    with_tags: bool = False,
    window: tuple[datetime, datetime] | None = None,
) -> None:
    ctes: list[str] = []
    params: list = []
    kinds: list[str] = []
    walks = ""
    if legs.vector is not None:
        ctes.append("q AS (SELECT %s::vector AS v)")
        params.append(legs.vector)
        dense_sql, dense_params, walks = dense_ctes(
            parts, paths, filters, legs.embedder_id, legs.dims, depth
        )
        ctes += dense_sql
        params += dense_params
        kinds.append("SELECT 'd' AS kind, id, sim AS score FROM dense")
        if window is not None:
            window_sql, window_params = _window_cte(
                parts, filters, window, legs.embedder_id, legs.dims, depth
            )
            ctes.append(window_sql)
            params += window_params
            kinds.append("SELECT 't' AS kind, id, sim AS score FROM win")
    if lexemes:
        sparse_sql, sparse_params = sparse_ctes(
            parts, filters, lexemes, depth, scope_share,
            scope_rows=sum(counts.parts) if counts is not None else 0,
        )  # fmt: skip
        ctes.append(sparse_sql)
        params += sparse_params
        kinds.append("SELECT 's' AS kind, id, score FROM sparse")
    if legs.vector is not None:
        comparable = dense_condition(legs.embedder_id, legs.dims, escape=True)
        # A chunked memory's similarity is its best window's (GREATEST ignores NULLs).
        similarity = (
            f"GREATEST(CASE WHEN {comparable} THEN 1 - (m.embedding <=> {QUERY_VECTOR}) END, "
            f"{chunk_similarity(legs.embedder_id, legs.dims)})"
        )
    else:
        similarity = "NULL::float8"
    meta = "m.created_at, m.is_shared" if with_meta else "NULL::timestamptz, NULL::boolean"
    tags = (
        f"ARRAY(SELECT t FROM unnest(m.tags) AS t WHERE left(t, {len(SPEAKER_TAG_PREFIX)}) = "
        f"'{SPEAKER_TAG_PREFIX}')"
        if with_tags
        else "NULL::varchar[]"
    )
    sql = (
        f"WITH {', '.join(ctes)} "
        f"SELECT c.kind, c.id, c.score, {similarity}, {meta}, {tags} "
        f"FROM ({' UNION ALL '.join(kinds)}) AS c JOIN memory_memory m ON m.id = c.id"
    )
    if walks:
        sql += (
            " UNION ALL SELECT 'w' || w.part, NULL::uuid, w.walked::float8, NULL::float8, "
            f"NULL::timestamptz, NULL::boolean, NULL::varchar[] FROM ({walks}) AS w"
        )
    sql += " ORDER BY 1, 3 DESC, 2"

    walking = HNSW in paths
    # The walk's width follows the walked parts' shares of the indexes they walk.
    settings = {}
    if walking and counts is not None:
        settings = hnsw_settings(
            depth, _supports_iterative_scan(), index_rows=counts.index_rows(parts),
            part_rows=counts.parts, paths=paths,
        )  # fmt: skip
    clock = time.perf_counter()
    rows = _execute_prepared(
        sql, params, settings, plan_cache_mode=CUSTOM_PLAN if settings else PLAN_CACHE_MODE
    )
    legs.timings["statement_ms"] = (time.perf_counter() - clock) * 1000
    walked: dict[int, float] = {}
    for kind, mid, score, sim, created_at, is_shared, speaker_tags in rows:
        if kind.startswith("w"):
            walked[int(kind[1:])] = score
            continue
        {"d": legs.dense, "s": legs.sparse, "t": legs.window}[kind].append((mid, score))
        if sim is not None:
            legs.similarity[mid] = sim
        if with_meta:
            legs.meta[mid] = (created_at, is_shared)
        if speaker_tags:
            legs.tags[mid] = speaker_tags
    legs.dense_paths = [
        (HNSW if walked[index] >= depth else HNSW_EXACT) if path == HNSW else path
        for index, path in enumerate(paths)
    ]


#: The search statement's text repeats (its values are parameters), and PostgreSQL took
#: longer to plan it than to run it (measured:
#: docs/benchmarks/http.md#where-each-millisecond-goes-issue-35). One that walks no HNSW
#: index runs as a server-side prepared statement of the connection, with a generic plan.
PLAN_CACHE_MODE = "force_generic_plan"
#: One that walks an HNSW index is prepared too (parsed and analysed once per connection)
#: but planned for its own values every time: with a generic plan it ran slower than the
#: planning it saved, prepared with a custom plan it was faster than sent as a client-bound
#: script (measured: docs/benchmarks/latency.md#levers-abd-at-10k-issue-35).
CUSTOM_PLAN = "force_custom_plan"


def _execute_prepared(
    sql: str,
    params: list,
    settings: dict[str, str] | None = None,
    plan_cache_mode: str = PLAN_CACHE_MODE,
) -> list[tuple]:
    """The search statement as the read connection's prepared statement
    (:func:`synthorg.db.prepared.execute_prepared`), under ``plan_cache_mode``
    (:data:`PLAN_CACHE_MODE`, :data:`CUSTOM_PLAN`) and a walk's ``settings``
    (:func:`~.dense.hnsw_settings`), set in the same round trip."""
    return execute_prepared(
        read_connection(), sql, params, {"plan_cache_mode": plan_cache_mode, **(settings or {})}
    )


def _window_cte(
    parts: Sequence[Part],
    filters: Part,
    window: tuple[datetime, datetime],
    embedder_id: str,
    dims: int,
    depth: int,
) -> tuple[str, list]:
    """``win(id, sim)``: the scope's rows created in ``window``, best ``depth`` by exact
    similarity. Each part is read through its ``created_at`` b-tree (the agent's or the
    company's shared rows, newest first), so a window that holds no rows costs one index
    probe per part, not a pass over the scope; and at most :data:`WINDOW_ROWS_MAX` of a
    part's newest rows in the window are compared, so a window that holds most of a large
    store ("today", the day of a bulk import) costs a bounded scan."""
    branches, params = [], []
    for part in parts:
        branches.append(
            f"(SELECT w.id, 1 - (w.embedding <=> {QUERY_VECTOR}) AS sim FROM "
            f"(SELECT m.id, m.embedding FROM memory_memory m WHERE {part.sql} AND {filters.sql} "
            "AND m.created_at >= %s AND m.created_at < %s "
            f"AND {dense_condition(embedder_id, dims, escape=True)} "
            f"ORDER BY m.created_at DESC LIMIT {WINDOW_ROWS_MAX}) AS w "
            "ORDER BY sim DESC, w.id LIMIT %s)"
        )
        params += [*part.params, *filters.params, window[0], window[1], depth]
    sql = f"win AS (SELECT id, sim FROM ({' UNION ALL '.join(branches)}) AS w "
    sql += "ORDER BY sim DESC, id LIMIT %s)"
    return sql, [*params, depth]


_iterative_scan_supported: bool | None = None


def _supports_iterative_scan() -> bool:
    """pgvector ≥ 0.8 (the production requirement; older servers are flagged by /healthz)."""
    global _iterative_scan_supported
    if HNSW_ITERATIVE_SCAN == "off":
        return False
    if _iterative_scan_supported is None:
        with read_connection().cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        version = tuple(int(p) for p in row[0].split(".")[:2]) if row else (0, 0)
        _iterative_scan_supported = version >= (0, 8)
    return _iterative_scan_supported
