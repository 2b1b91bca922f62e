"""Hybrid memory search: a dense leg (pgvector cosine) and a sparse leg (BM25 in SQL), fused.

Scope
    ``memory_search`` looks at the agent's live private memories and, when asked, the
    company's live shared knowledge; ``shared_search`` at the company's shared knowledge only.
    Live = not superseded and not expired. Nothing crosses companies.

Dense leg
    Cosine similarity between the query embedding and stored vectors *of the same
    embedder_id* (vectors of another model are never compared). pgvector 0.6 filters HNSW
    results after the graph walk, so a filter that keeps few rows starves the index. While
    the whole table holds up to ``EXACT_SCAN_MAX_ROWS`` rows (planner estimate, checked with
    a bounded count when small), each part of the scope (private rows of one agent; shared
    rows of one company) is scanned exactly (ordered by similarity, an expression HNSW cannot
    serve). Above it, a part the planner estimates at ``HNSW_MIN_SHARE`` of the table or
    more (or above ``PART_EXACT_MAX_ROWS``) is walked with HNSW first (``hnsw.ef_search``
    200, then 1000) with the part's filters, and a smaller part is scanned exactly. A walk
    that returns ``depth`` filtered rows found the part's true nearest among its
    candidates, so it is kept; one that returns fewer falls back to the exact scan.
    ``bench/scale_search.py`` measures both paths and the recall against an exact scan.

Sparse leg
    Okapi BM25 (k1 1.2, b 0.75, idf ``ln(1 + (N − df + 0.5)/(df + 0.5))``) computed in one
    SQL statement over the scope: N and the average document length over the filtered
    scope, df and tf from the trigger-maintained ``search_vector`` (english stemming, stop
    words removed) and ``doc_length``. See :mod:`synthorg.retrieval.bm25`. Without metadata
    filters, N and the length sum come from the trigger-maintained per-(company, agent,
    is_shared) totals in ``memory_bm25_scope_stats`` minus the scope's expired rows
    (migration 0006) instead of a scan of the scope; with filters the scope is scanned.
    Query lexemes that ANALYZE found in ≥ ``COMMON_LEXEME_SHARE`` of the table's rows only
    score candidates, they do not find them (see :func:`common_lexemes`).

Fusion
    Per the company's ``memory.retrieval`` config. ``rrf``: the two ranked lists fused by
    Reciprocal Rank Fusion (``rrf_k``), min-max normalised, ``min_relevance`` applied to the
    fused score. ``linear``: relevance is the cosine similarity of every candidate either leg
    produced (``default_relevance`` for a row without a comparable vector), plus
    ``personal_boost`` for private rows, combined with exponential recency. If the query
    cannot be embedded, the sparse leg answers alone and ``degraded`` is ``["dense"]``.

A query without text lists memories newest first (metadata filters only).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from memory.embedding import embedder_for
from memory.models import Memory
from memory.reembed.selectors import DEGRADED_REEMBEDDING, reembedding_status
from memory.retrieval.query import MAX_LIMIT, MemoryQuery
from memory.retrieval.ranking import Candidate, rank_linear, recency_score
from memory.vector_indexes import dense_condition, dense_distance, vector_index_ready
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.company_config import FusionStrategy, MemoryRetrievalConfig
from synthorg.embedding import Embedder, EmbeddingError, embed_query
from synthorg.errors import DomainError
from synthorg.retrieval import bm25
from synthorg.retrieval.fusion import rrf_fuse
from synthorg.retrieval.vectors import vector_literal

logger = logging.getLogger(__name__)

#: Up to this many rows in the whole table, the dense leg scans the scope exactly; above it
#: the HNSW walk answers first (measured in bench/results/scale_search_10k_stages.json).
EXACT_SCAN_MAX_ROWS = 5_000
#: Above ``EXACT_SCAN_MAX_ROWS``, a part the planner estimates at this share of the table or
#: more (or at more than ``PART_EXACT_MAX_ROWS`` rows) is walked with HNSW first; a smaller
#: part is scanned exactly (a walk would mostly return other agents' rows).
HNSW_MIN_SHARE = 0.25
PART_EXACT_MAX_ROWS = 20_000
#: The first HNSW walk's width (at least ``HNSW_EF_DEPTH_FACTOR`` × the leg depth).
HNSW_EF_SEARCH_FIRST = 200
HNSW_EF_DEPTH_FACTOR = 4
#: pgvector's maximum; the widened walk returns at most this many rows before filtering.
HNSW_EF_SEARCH = 1000
#: pgvector ≥ 0.8 iterative index scans: a filtered walk that comes back short resumes the
#: graph walk (in exact distance order, ``strict_order``) until it has ``depth`` rows or has
#: visited ``HNSW_MAX_SCAN_TUPLES`` tuples, instead of returning short and being redone
#: wider. Used on the HNSW path only (parts of moderate or large share); small parts keep the
#: exact scan, which is faster there (measured: at 1 % selectivity ``relaxed_order`` is
#: slower than an exact scan).
HNSW_ITERATIVE_SCAN = "strict_order"
HNSW_MAX_SCAN_TUPLES = 20_000
#: Each leg fetches this many candidates at least (fusion needs depth beyond ``limit``).
MIN_LEG_DEPTH = 50
LEG_DEPTH_FACTOR = 3

DEGRADED_DENSE = "dense"
#: The legs a search runs; benchmarks and diagnostics may run one alone.
LEGS = ("dense", "sparse")
LEG_ONLY_UNKNOWN = "legs must be a non-empty subset of ('dense', 'sparse')."


@dataclass
class SearchHit:
    memory: Memory
    relevance: float
    recency: float
    combined: float
    dense_rank: int | None
    sparse_rank: int | None
    is_shared: bool
    dense_score: float | None = None  # cosine similarity, when the dense leg returned it
    sparse_score: float | None = None  # BM25, when the sparse leg returned it


@dataclass
class SearchResult:
    hits: list[SearchHit]
    degraded: list[str] = field(default_factory=list)
    #: how the dense leg searched each scope part ("exact" / "hnsw" / "hnsw+exact")
    dense_paths: list[str] = field(default_factory=list)
    #: wall-clock of the stages (embed_ms, dense_ms, sparse_ms), for diagnostics and benches
    timings: dict[str, float] = field(default_factory=dict)
    #: while the company's vectors are being re-embedded for the query's embedder: the
    #: job's progress (``degraded`` then holds ``"reembedding"``)
    reembedding: dict | None = None


class _Skipped(Exception):
    pass


@dataclass(frozen=True)
class _Part:
    """One part of the scope: a SQL condition on ``m`` and its parameters."""

    sql: str
    params: tuple
    #: filters only: nothing but liveness (the BM25 scope statistics can be read from
    #: ``memory_bm25_scope_stats`` instead of scanning the scope)
    live_only: bool = False


@dataclass
class _Legs:
    dense: list[tuple]  # (id, similarity) best first
    sparse: list[tuple]  # (id, bm25) best first
    degraded: list[str]
    dense_paths: list[str]
    vector: str | None = None  # the query embedding as a pgvector literal
    embedder_id: str = ""
    dims: int = 0  # the query embedder's width (vectors of another width are never compared)
    timings: dict[str, float] = field(default_factory=dict)


def memory_search(
    *,
    agent: Agent,
    query: MemoryQuery,
    include_shared: bool | None = None,
    config: MemoryRetrievalConfig | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    leg_depth: int | None = None,
    legs: Sequence[str] = LEGS,
) -> SearchResult:
    """The agent's live private memories (and the company's shared knowledge) for ``query``."""
    company = agent.company
    full_config = company_config(company)
    config = config or full_config.memory.retrieval
    if include_shared is None:
        include_shared = config.include_shared
    include_shared = include_shared and full_config.memory.options.shared_knowledge_base
    parts = [
        _Part(
            "m.company_id = %s AND m.agent_id = %s AND NOT m.is_shared",
            (agent.company_id, agent.pk),
        )
    ]
    if include_shared:
        parts.append(_Part("m.company_id = %s AND m.is_shared", (agent.company_id,)))
    return _search(
        company=company,
        parts=parts,
        query=query,
        config=config,
        embedder=embedder,
        now=now,
        leg_depth=leg_depth,
        legs=legs,
    )


def shared_search(
    *,
    company: Company,
    query: MemoryQuery,
    exclude_agent: Agent | None = None,
    config: MemoryRetrievalConfig | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    leg_depth: int | None = None,
    legs: Sequence[str] = LEGS,
) -> SearchResult:
    """The company's live shared knowledge for ``query`` (optionally not ``exclude_agent``'s)."""
    config = config or company_config(company).memory.retrieval
    if exclude_agent is not None:
        part = _Part(
            "m.company_id = %s AND m.is_shared AND m.agent_id <> %s",
            (company.pk, exclude_agent.pk),
        )
    else:
        part = _Part("m.company_id = %s AND m.is_shared", (company.pk,))
    return _search(
        company=company,
        parts=[part],
        query=query,
        config=config,
        embedder=embedder,
        now=now,
        leg_depth=leg_depth,
        legs=legs,
    )


# --- the pipeline ----------------------------------------------------------------------------


def _search(
    *,
    company: Company,
    parts: Sequence[_Part],
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    embedder: Embedder | None,
    now: datetime | None,
    leg_depth: int | None,
    legs: Sequence[str] = ("dense", "sparse"),
) -> SearchResult:
    if not legs or not set(legs) <= set(LEGS):
        raise ValueError(LEG_ONLY_UNKNOWN)
    now = now or timezone.now()
    filters = _filters(query, now)
    if query.text is None:
        return _listing(parts=parts, filters=filters, query=query, config=config, now=now)

    depth = leg_depth or min(MAX_LIMIT, max(MIN_LEG_DEPTH, LEG_DEPTH_FACTOR * query.limit))
    ran = _run_legs(
        company=company, parts=parts, filters=filters, text=query.text, embedder=embedder,
        depth=depth, use_dense="dense" in legs, use_sparse="sparse" in legs,
    )  # fmt: skip
    min_relevance = config.min_relevance if query.min_relevance is None else query.min_relevance
    dense_score, sparse_score = dict(ran.dense), dict(ran.sparse)
    dense_rank = {mid: rank for rank, (mid, _) in enumerate(ran.dense, start=1)}
    sparse_rank = {mid: rank for rank, (mid, _) in enumerate(ran.sparse, start=1)}
    candidate_ids = list(dict.fromkeys([mid for mid, _ in ran.dense + ran.sparse]))
    similarity = dict(ran.dense)

    scored: list[tuple]  # (id, relevance, recency, combined), best first
    if config.fusion_strategy is FusionStrategy.RRF:
        fused = rrf_fuse(
            [[mid for mid, _ in ran.dense], [mid for mid, _ in ran.sparse]], k=config.rrf_k
        )
        top = [(mid, score) for mid, score in fused if score >= min_relevance][: query.limit]
        similarity.update(_similarities(ran, [mid for mid, _ in top if mid not in similarity]))
        scored = [(mid, _clamp(similarity.get(mid, 0.0)), 0.0, score) for mid, score in top]
    else:
        similarity.update(_similarities(ran, [m for m in candidate_ids if m not in similarity]))
        if DEGRADED_DENSE in ran.degraded and ran.sparse:
            best = ran.sparse[0][1] or 1.0
            relevance = {mid: score / best for mid, score in ran.sparse}
        else:
            relevance = {mid: _clamp(sim) for mid, sim in similarity.items()}
        meta = _row_meta(candidate_ids)
        ranked = rank_linear(
            [
                Candidate(
                    key=mid,
                    relevance=relevance.get(mid),
                    created_at=meta[mid][0],
                    is_shared=meta[mid][1],
                )
                for mid in candidate_ids
                if mid in meta
            ],
            now=now,
            relevance_weight=config.relevance_weight,
            recency_weight=config.recency_weight,
            decay_rate=config.recency_decay_rate,
            personal_boost=config.personal_boost,
            default_relevance=config.default_relevance,
            min_relevance=min_relevance,
            max_results=query.limit,
        )
        scored = [(s.key, s.relevance, s.recency, s.combined) for s in ranked]

    memories = _hydrate([row[0] for row in scored])
    hits = [
        SearchHit(
            memory=memories[mid],
            relevance=relevance_value,
            recency=recency_value,
            combined=combined,
            dense_rank=dense_rank.get(mid),
            sparse_rank=sparse_rank.get(mid),
            is_shared=memories[mid].is_shared,
            dense_score=dense_score.get(mid),
            sparse_score=sparse_score.get(mid),
        )
        for mid, relevance_value, recency_value, combined in scored
        if mid in memories
    ]
    degraded, reembedding = ran.degraded, None
    if ran.vector is not None:
        # Rows not yet re-embedded have no vector of the query's embedder: only BM25 sees them.
        reembedding = reembedding_status(company.pk, ran.embedder_id, ran.dims)
        if reembedding is not None:
            degraded = [*degraded, DEGRADED_REEMBEDDING]
    return SearchResult(
        hits=hits,
        degraded=degraded,
        dense_paths=ran.dense_paths,
        timings=ran.timings,
        reembedding=reembedding,
    )


def _row_meta(ids: Sequence) -> dict:
    """``id → (created_at, is_shared)`` for the linear ranking."""
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.created_at, m.is_shared FROM memory_memory m WHERE m.id = ANY(%s)",
            [list(ids)],
        )
        return {mid: (created, shared) for mid, created, shared in cursor.fetchall()}


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _filters(query: MemoryQuery, now: datetime) -> _Part:
    clauses = ["m.superseded_at IS NULL", "(m.expires_at IS NULL OR m.expires_at > %s)"]
    params: list = [now]
    if query.namespaces:
        clauses.append("m.namespace = ANY(%s)")
        params.append(list(query.namespaces))
    if query.categories:
        clauses.append("m.category = ANY(%s)")
        params.append([c.value for c in query.categories])
    if query.tags:
        clauses.append("m.tags @> %s::varchar(64)[]")
        params.append(list(query.tags))
    if query.since is not None:
        clauses.append("m.created_at >= %s")
        params.append(query.since)
    if query.until is not None:
        clauses.append("m.created_at < %s")
        params.append(query.until)
    return _Part(" AND ".join(clauses), tuple(params), live_only=len(clauses) == 2)


def _listing(
    *,
    parts: Sequence[_Part],
    filters: _Part,
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    now: datetime,
) -> SearchResult:
    scope = " OR ".join(f"({part.sql})" for part in parts)
    params = [p for part in parts for p in part.params] + list(filters.params)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM memory_memory m WHERE ({scope}) AND {filters.sql} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %s",
            [*params, query.limit],
        )
        ids = [row[0] for row in cursor.fetchall()]
    memories = _hydrate(ids)
    hits = []
    for mid in ids:
        memory = memories[mid]
        relevance = config.default_relevance
        if not memory.is_shared and config.fusion_strategy is FusionStrategy.LINEAR:
            relevance = min(1.0, relevance + config.personal_boost)
        recency = recency_score(memory.created_at, now, config.recency_decay_rate)
        combined = config.relevance_weight * relevance + config.recency_weight * recency
        hits.append(
            SearchHit(
                memory=memory,
                relevance=relevance,
                recency=recency,
                combined=min(1.0, max(0.0, combined)),
                dense_rank=None,
                sparse_rank=None,
                is_shared=memory.is_shared,
            )
        )
    return SearchResult(hits=hits)


#: What a hit carries: every column but the vectors (loaded as deferred fields).
_HYDRATED_FIELDS = tuple(
    f for f in Memory._meta.concrete_fields if f.attname not in ("embedding", "search_vector")
)
_HYDRATE_SQL = "SELECT {} FROM memory_memory m WHERE m.id = ANY(%s)".format(
    ", ".join(f'm."{f.column}"' for f in _HYDRATED_FIELDS)
)


def _hydrate(ids: Sequence) -> dict:
    """``id → Memory`` (as ``defer("embedding", "search_vector").in_bulk``, without the
    queryset machinery: measured 1.2 ms instead of 2.5 ms for 10 rows)."""
    if not ids:
        return {}
    names = [f.attname for f in _HYDRATED_FIELDS]
    converters = [
        (i, f.get_db_converters(connection))
        for i, f in enumerate(_HYDRATED_FIELDS)
        if f.get_db_converters(connection)
    ]
    with connection.cursor() as cursor:
        cursor.execute(_HYDRATE_SQL, [list(ids)])
        rows = cursor.fetchall()
    memories = {}
    for row in rows:
        values = list(row)
        for i, funcs in converters:
            for func in funcs:
                values[i] = func(values[i], None, connection)
        memory = Memory.from_db(connection.alias, names, values)
        memories[memory.pk] = memory
    return memories


# --- the legs --------------------------------------------------------------------------------


def _run_legs(
    *,
    company: Company,
    parts: Sequence[_Part],
    filters: _Part,
    text: str,
    embedder: Embedder | None,
    depth: int,
    use_dense: bool = True,
    use_sparse: bool = True,
) -> _Legs:
    degraded: list[str] = []
    vector: np.ndarray | None = None
    embedder_id = ""
    dims = 0
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    try:
        if not use_dense:
            raise _Skipped
        embedder = embedder or embedder_for(company)
        vector = embed_query(embedder, text)
        embedder_id = embedder.embedder_id
        dims = int(vector.shape[0])
    except (EmbeddingError, DomainError) as exc:
        logger.warning("query embedding failed for company %s: %s", company.pk, exc)
        degraded.append(DEGRADED_DENSE)
    except _Skipped:
        pass

    timings["embed_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    query_literal: str | None = None
    dense: list[tuple] = []
    paths: list[str] = []
    if vector is not None:
        literal = query_literal = vector_literal(vector)
        for part in parts:
            rows, path = _dense_part(part, filters, literal, embedder_id, dims, depth)
            dense.extend(rows)
            paths.append(path)
        dense.sort(key=lambda row: (-row[1], str(row[0])))
        dense = dense[:depth]
    timings["dense_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    sparse = _sparse(parts, filters, text, depth) if use_sparse else []
    timings["sparse_ms"] = (time.perf_counter() - clock) * 1000
    return _Legs(
        timings=timings,
        dense=dense,
        sparse=sparse,
        degraded=degraded,
        dense_paths=paths,
        vector=query_literal,
        embedder_id=embedder_id,
        dims=dims,
    )


def _dense_part(
    part: _Part, filters: _Part, literal: str, embedder_id: str, dims: int, depth: int
) -> tuple[list[tuple], str]:
    # Only vectors of the query's embedder and width; written as the predicate of that
    # embedder's partial HNSW index (memory.vector_indexes) so the walk can use it.
    where = f"{part.sql} AND {filters.sql} AND {dense_condition(embedder_id, dims, escape=True)}"
    params = [*part.params, *filters.params]
    with connection.cursor() as cursor:
        table_rows = _table_rows(cursor)
        if table_rows <= EXACT_SCAN_MAX_ROWS:
            return _dense_exact(cursor, where, params, literal, depth), "exact"
        if not vector_index_ready(embedder_id, dims):
            # No HNSW index for this embedder yet (being built for a new embedder).
            return _dense_exact(cursor, where, params, literal, depth), "exact"
        part_rows = _part_rows_estimate(cursor, part)
        if part_rows < HNSW_MIN_SHARE * table_rows and part_rows <= PART_EXACT_MAX_ROWS:
            # A small share of the index (e.g. one of many agents): the walk would come back
            # short, and the part's own rows are cheap to scan exactly through its b-tree.
            return _dense_exact(cursor, where, params, literal, depth), "exact"
        # A filtered walk that returns ``depth`` rows found them among the walk's nearest
        # candidates, so the part's true top-k lie there too (recall = the walk's recall).
        # A part that is a small share of the index starves the walk: widen it once, then
        # scan the part exactly.
        for ef_search in _ef_steps(depth):
            rows = _dense_hnsw(cursor, where, params, literal, dims, depth, ef_search)
            if len(rows) >= depth:
                return rows, "hnsw"
        return _dense_exact(cursor, where, params, literal, depth), "hnsw+exact"


def _ef_steps(depth: int) -> list[int]:
    first = min(HNSW_EF_SEARCH, max(HNSW_EF_SEARCH_FIRST, HNSW_EF_DEPTH_FACTOR * depth))
    return [first] if first >= HNSW_EF_SEARCH else [first, HNSW_EF_SEARCH]


def _part_rows_estimate(cursor, part: _Part) -> float:
    """The planner's row estimate for the part (a planning round trip, no scan)."""
    cursor.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memory_memory m WHERE {part.sql}", part.params
    )
    plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Plan"]["Plan Rows"])


def _table_rows(cursor) -> int:
    """The planner's row estimate for the table, or (when it is small or unknown) an exact
    count bounded by ``EXACT_SCAN_MAX_ROWS`` (cheap: it reads at most that many rows)."""
    # One round trip: the bounded count only runs when the estimate is small or unknown.
    cursor.execute(
        "SELECT CASE WHEN c.reltuples > %s THEN c.reltuples::bigint "
        "ELSE (SELECT count(*) FROM (SELECT 1 FROM memory_memory LIMIT %s) AS bounded) END "
        "FROM pg_class c WHERE c.oid = 'memory_memory'::regclass",
        [EXACT_SCAN_MAX_ROWS, EXACT_SCAN_MAX_ROWS + 1],
    )
    return int(cursor.fetchone()[0])


def _dense_exact(cursor, where: str, params: list, literal: str, depth: int) -> list[tuple]:
    # Ordering by the similarity (not by the raw distance operator) is something the HNSW
    # index cannot serve, so the planner reads the part's rows through its b-tree and sorts:
    # an exact top-k over exactly the rows the filters keep.
    cursor.execute(
        f"SELECT m.id, 1 - (m.embedding <=> %s::vector) AS similarity FROM memory_memory m "
        f"WHERE {where} ORDER BY similarity DESC, m.id LIMIT %s",
        [literal, *params, depth],
    )
    return cursor.fetchall()


_iterative_scan_supported: bool | None = None


def _supports_iterative_scan(cursor) -> bool:
    """pgvector ≥ 0.8 (the production requirement; older servers are flagged by /healthz)."""
    global _iterative_scan_supported
    if _iterative_scan_supported is None:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        version = tuple(int(p) for p in row[0].split(".")[:2]) if row else (0, 0)
        _iterative_scan_supported = version >= (0, 8)
    return _iterative_scan_supported


def _dense_hnsw(
    cursor, where: str, params: list, literal: str, dims: int, depth: int, ef_search: int
) -> list[tuple]:
    iterative = HNSW_ITERATIVE_SCAN != "off" and _supports_iterative_scan(cursor)
    with transaction.atomic():
        # Transaction-local settings: a wide graph walk, and no explicit sort so the planner
        # takes the index-ordered HNSW scan rather than sorting the whole part.
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_sort', 'off', true)",
            [str(ef_search)],
        )
        if iterative:
            cursor.execute(
                "SELECT set_config('hnsw.iterative_scan', %s, true), "
                "set_config('hnsw.max_scan_tuples', %s, true)",
                [HNSW_ITERATIVE_SCAN, str(HNSW_MAX_SCAN_TUPLES)],
            )
        cursor.execute(
            f"SELECT m.id, 1 - (m.embedding <=> %s::vector) FROM memory_memory m "
            f"WHERE {where} ORDER BY {dense_distance(dims)} LIMIT %s",
            [literal, *params, literal, depth],
        )
        rows = cursor.fetchall()
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', '40', true), set_config('enable_sort', 'on', true)"
        )
        if iterative:
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'off', true)")
    return rows


def query_lexemes(text: str) -> list[str]:
    """The distinct english lexemes of ``text`` (what the sparse leg matches on)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english'::regconfig, %s))", [text])
        (lexemes,) = cursor.fetchone()
    return list(lexemes or [])


_BM25_SQL = """
WITH stats AS ({stats}),
matched AS (
    SELECT m.id, m.doc_length, t.lexeme,
           coalesce(array_length(t.positions, 1), 1)::float8 AS tf
      FROM memory_memory m,
           -- the query's lexemes only: marked with weight A, then kept by weight (one C
           -- call per row instead of unnesting every lexeme; measured 1.5x faster)
           unnest(ts_filter(setweight(m.search_vector, 'A', %s::text[]), '{{a}}')) AS t
     WHERE ({scope}) AND {filters} AND m.search_vector @@ %s::tsquery
),
-- df of the matching lexemes over the candidates (exact: every row holding one is one);
-- a common lexeme (not used to find candidates) gets its table share × N instead
df AS (
    SELECT lexeme, count(*)::float8 AS df FROM matched
     WHERE lexeme <> ALL(%s::text[]) GROUP BY lexeme
    UNION ALL
    SELECT c.lexeme, greatest(1.0, c.share * stats.n)
      FROM unnest(%s::text[], %s::float8[]) AS c(lexeme, share) CROSS JOIN stats
)
SELECT matched.id,
       sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
           * matched.tf * (%s + 1)
           / (matched.tf + %s * (1 - %s + %s * CASE WHEN stats.avgdl > 0
                                                    THEN matched.doc_length / stats.avgdl
                                                    ELSE 0 END))) AS score
  FROM matched JOIN df USING (lexeme) CROSS JOIN stats
 GROUP BY matched.id
 ORDER BY score DESC, matched.id
 LIMIT %s
"""

# N and avgdl over the filtered scope, by scanning it (any metadata filter).
_STATS_SCAN_SQL = """
    SELECT count(*)::float8 AS n, coalesce(avg(m.doc_length), 0)::float8 AS avgdl
      FROM memory_memory m
     WHERE ({scope}) AND {filters}
"""

# The same for a liveness-only scope without scanning it: the trigger-maintained totals of
# its non-superseded rows (migration 0006) minus its expired ones (expires_at index range).
_STATS_TOTALS_SQL = """
    SELECT (total.n - expired.n)::float8 AS n,
           CASE WHEN total.n - expired.n > 0
                THEN (total.dl - expired.dl)::float8 / (total.n - expired.n)
                ELSE 0 END AS avgdl
      FROM (SELECT coalesce(sum(m.n), 0) AS n, coalesce(sum(m.sum_doc_length), 0) AS dl
              FROM memory_bm25_scope_stats m WHERE ({scope})) AS total,
           (SELECT count(*) AS n, coalesce(sum(m.doc_length), 0) AS dl
              FROM memory_memory m
             WHERE ({scope}) AND m.superseded_at IS NULL AND m.expires_at <= %s) AS expired
"""


#: A query lexeme that ANALYZE found in at least this share of the table's rows is
#: *common*: its posting list is most of the table, and reading it (then throwing most of
#: it away for other agents' rows) was most of the sparse leg's time. Common lexemes still
#: score the candidates the other lexemes find, with df = share × N (BM25 gives them an idf
#: of ≤ ln(1 + 0.8/0.2) ≈ 1.6 against 5–9 for a rare term); a document holding only common
#: lexemes of the query is no longer a candidate. A query of common lexemes only is run
#: unchanged. Measured in bench/results/scale_search_10k_stages.json (README).
COMMON_LEXEME_SHARE = 0.2
#: How long the table's lexeme statistics are reused before pg_stats is read again.
LEXEME_STATS_TTL_S = 300.0
_lexeme_stats: tuple[float, dict[str, float]] = (float("-inf"), {})


def common_lexemes(lexemes: Sequence[str]) -> dict[str, float]:
    """``lexeme → share of rows`` for the query lexemes that are common (see above)."""
    global _lexeme_stats
    read_at, shares = _lexeme_stats
    if time.monotonic() - read_at > LEXEME_STATS_TTL_S:
        with connection.cursor() as cursor:
            # ANALYZE keeps the most common lexemes of a tsvector column with their share of
            # rows (most_common_elem_freqs ends with 3 summary numbers: skipped by zip).
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = 'memory_memory' "
                "AND attname = 'search_vector'"
            )
            row = cursor.fetchone()
        shares = dict(zip(row[0], row[1], strict=False)) if row and row[0] else {}
        shares = {lexeme: share for lexeme, share in shares.items() if share >= COMMON_LEXEME_SHARE}
        _lexeme_stats = (time.monotonic(), shares)
    return {lexeme: shares[lexeme] for lexeme in lexemes if lexeme in shares}


def _sparse(parts: Sequence[_Part], filters: _Part, text: str, depth: int) -> list[tuple]:
    lexemes = query_lexemes(text)
    if not lexemes:
        return []
    scope = " OR ".join(f"({part.sql})" for part in parts)
    scope_params = [p for part in parts for p in part.params]
    common = common_lexemes(lexemes)
    if len(common) == len(lexemes):
        common = {}
    finders = [lexeme for lexeme in lexemes if lexeme not in common]
    tsquery = " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in finders)
    if filters.live_only:
        stats = _STATS_TOTALS_SQL.format(scope=scope)
        stats_params = [*scope_params, *scope_params, filters.params[0]]
    else:
        stats = _STATS_SCAN_SQL.format(scope=scope, filters=filters.sql)
        stats_params = [*scope_params, *filters.params]
    sql = _BM25_SQL.format(stats=stats, scope=scope, filters=filters.sql)
    params = [
        *stats_params,
        lexemes,
        *scope_params,
        *filters.params,
        tsquery,
        list(common),
        list(common),
        list(common.values()),
        bm25.K1,
        bm25.K1,
        bm25.B,
        bm25.B,
        depth,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _similarities(legs: _Legs, ids: list) -> dict:
    """Cosine similarity of sparse-only candidates (rows of the query's embedder only)."""
    if not ids or legs.vector is None:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, 1 - (m.embedding <=> %s::vector) FROM memory_memory m "
            f"WHERE m.id = ANY(%s) AND {dense_condition(legs.embedder_id, legs.dims, escape=True)}",
            [legs.vector, list(ids)],
        )
        return dict(cursor.fetchall())
