"""Two HNSW indexes per (embedder, width) over the memory table's untyped vector column:
one over private rows, one over shared rows.

Why per embedder: the ``embedding`` column is an untyped ``vector`` (migration 0011), so a
company may switch to an embedder of any width (768, 1024, 1536, 3072…) without a schema
change. HNSW needs a fixed width, so each (embedder id, dims) gets *partial expression
indexes*::

    CREATE INDEX memory_embp_<hash> ON memory_memory
     USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64)
     WHERE embedder_id = '<id>' AND vector_dims(embedding) = 384 AND NOT is_shared

and the dense leg writes the same cast and the same conditions (:func:`dense_condition`,
:func:`dense_distance`; the scope part says ``NOT m.is_shared`` or ``m.is_shared``), so the
planner proves the predicate and walks only that embedder's graph: vectors of another
embedder (or another width under the same id) are never in it and never compared. Wider
than 2,000 dims the index is built on ``halfvec`` (pgvector's HNSW limit for ``vector``); the
exact path always compares the stored full-precision vectors.

Why private and shared apart (migration 0022): pgvector filters an HNSW walk's candidates
*after* the walk, so a walk keeps about the part's share of what it visits. A company's
shared rows are a small share of a table that also holds every agent's private rows (50k of
1M: 5 %, which no walk pgvector allows covers), so they used to be scanned exactly
(measured: docs/benchmarks/scale.md#dev-seed-sweep); in their own index they are most of it,
and the walk keeps what it visits. The two
indexes are disjoint, so nothing is indexed twice.

A new index is built ``CONCURRENTLY`` (writes go on meanwhile) as the schema owner
(:func:`synthorg.db.roles.owner_execute`), outside any transaction: by the re-embedding job
(``memory.core.services.reembed``) before it writes the first vector of a new embedder.
Until it is valid the dense leg's HNSW path has nothing to walk for that embedder and part
and falls back to the exact scan, which needs no index. The catalog is the registry: no
table records which indexes exist, :func:`vector_index_state` asks ``pg_index``.
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.db import connection

from synthorg.db.roles import owner_execute
from synthorg.retrieval.vectors import cosine_opclass, indexed_type

logger = logging.getLogger(__name__)

TABLE = "memory_memory"
#: Private rows' and shared rows' index names: the prefix, then a digest of (embedder, dims).
PRIVATE_PREFIX = "memory_embp_"
SHARED_PREFIX = "memory_embs_"
#: Before migration 0022: one index over all rows of an (embedder, dims).
LEGACY_PREFIX = "memory_emb_"
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
IN_TRANSACTION = "A vector index is built concurrently, which cannot run inside a transaction."


def sql_string(value: str) -> str:
    """``value`` as a standard SQL string literal (index predicates take no parameters)."""
    if "\x00" in value:
        raise ValueError("NUL in an embedder id")
    return "'" + value.replace("'", "''") + "'"


def index_name(embedder_id: str, dims: int, *, shared: bool) -> str:
    """The index over the private (``shared=False``) or shared rows of (embedder, dims)."""
    digest = hashlib.sha256(f"{embedder_id}\x1f{int(dims)}".encode()).hexdigest()[:16]
    return f"{SHARED_PREFIX if shared else PRIVATE_PREFIX}{digest}"


def dense_condition(embedder_id: str, dims: int, alias: str = "m", *, escape: bool = False) -> str:
    """The WHERE condition naming exactly the rows of one (embedder, width) — the index's
    predicate, written the same way so the planner can prove it (as literals: a bound
    parameter could not prove it). ``escape``: for a statement run with parameters, where
    ``%`` must be doubled."""
    literal = sql_string(embedder_id)
    if escape:
        literal = literal.replace("%", "%%")
    return f"{alias}.embedder_id = {literal} AND vector_dims({alias}.embedding) = {int(dims)}"


def dense_distance(dims: int, literal_placeholder: str = "%s", alias: str = "m") -> str:
    """Cosine distance between the row's vector and the query, cast as the index is."""
    sql_type = indexed_type(dims)
    return f"({alias}.embedding::{sql_type}) <=> {literal_placeholder}::{sql_type}"


def create_index_sql(embedder_id: str, dims: int, *, shared: bool, concurrently: bool) -> str:
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS "
        f"{index_name(embedder_id, dims, shared=shared)} ON {TABLE} USING hnsw "
        f"((embedding::{indexed_type(dims)}) {cosine_opclass(dims)}) "
        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
        f"WHERE embedder_id = {sql_string(embedder_id)} AND vector_dims(embedding) = {int(dims)} "
        f"AND {'' if shared else 'NOT '}is_shared"
    )


def vector_index_state(embedder_id: str, dims: int, *, shared: bool | None = None) -> str:
    """``"ready"`` (valid), ``"building"`` / ``"invalid"`` (not yet or no longer usable: a
    concurrent build in progress or one that failed), or ``"missing"``: of the private or
    shared rows' index, or (``shared=None``) of both (the less usable of the two)."""
    if shared is None:
        states = {vector_index_state(embedder_id, dims, shared=kind) for kind in (False, True)}
        return next(s for s in ("missing", "invalid", "building", "ready") if s in states)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid, i.indisready FROM pg_index i JOIN pg_class c ON c.oid = "
            "i.indexrelid WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
            [index_name(embedder_id, dims, shared=shared)],
        )
        row = cursor.fetchone()
    if row is None:
        return "missing"
    valid, ready = row
    if valid:
        return "ready"
    return "building" if not ready else "invalid"


#: How long a "not ready" answer is reused before the catalog is asked again (a ready index
#: stays ready: it is cached for the life of the process).
NOT_READY_TTL_S = 30.0
_ready: dict[tuple[str, int, bool], float] = {}


def vector_index_ready(embedder_id: str, dims: int, *, shared: bool) -> bool:
    """Whether the dense leg can walk this embedder's index of private or shared rows
    (cached per process)."""
    key = (embedder_id, int(dims), shared)
    checked = _ready.get(key)
    if checked == float("inf"):
        return True
    if checked is not None and time.monotonic() - checked < NOT_READY_TTL_S:
        return False
    ready = vector_index_state(embedder_id, dims, shared=shared) == "ready"
    _ready[key] = float("inf") if ready else time.monotonic()
    return ready


def ensure_vector_index(embedder_id: str, dims: int) -> bool:
    """Build the (embedder, dims) indexes (private rows', shared rows') unless valid ones
    exist; True if one was built.

    ``CREATE INDEX CONCURRENTLY``: writes to the table go on during the build. An invalid
    index left by a failed or interrupted build is dropped (concurrently) and rebuilt. Must
    run outside a transaction (a q2 task, a management command).
    """
    if connection.in_atomic_block:
        raise RuntimeError(IN_TRANSACTION)
    built = False
    for shared in (False, True):
        state = vector_index_state(embedder_id, dims, shared=shared)
        if state == "ready":
            continue
        name = index_name(embedder_id, dims, shared=shared)
        if state != "missing" and _build_in_progress(name):
            continue  # another process is building it; the dense leg waits for "ready"
        statements = []
        if state != "missing":
            statements.append(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        statements.append(create_index_sql(embedder_id, dims, shared=shared, concurrently=True))
        logger.info("building vector index %s for %s (%d dims)", name, embedder_id, dims)
        owner_execute(*statements)
        _ready.pop((embedder_id, int(dims), shared), None)
        built = True
    return built


def _build_in_progress(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_stat_progress_create_index p JOIN pg_class c "
            "ON c.oid = p.index_relid WHERE c.relname = %s",
            [name],
        )
        return cursor.fetchone() is not None
