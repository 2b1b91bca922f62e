"""The dense leg: cosine similarity between the query embedding and stored vectors.

Only vectors *of the same embedder_id* are compared (vectors of another model never are).
pgvector filters HNSW results after the graph walk, so a filter that keeps few rows starves
the index. While the whole table holds up to ``EXACT_SCAN_MAX_ROWS`` rows (planner estimate,
checked with a bounded count when small), each part of the scope (private rows of one agent;
shared rows of one company) is scanned exactly (ordered by similarity, an expression HNSW
cannot serve). Above it, a part the planner estimates at ``HNSW_MIN_SHARE`` of the table or
more (or above ``PART_EXACT_MAX_ROWS``) is walked with HNSW first (``hnsw.ef_search`` 200,
then 1000) with the part's filters, and a smaller part is scanned exactly. A walk that
returns ``depth`` filtered rows found the part's true nearest among its candidates, so it is
kept; one that returns fewer falls back to the exact scan. ``bench/scale_search.py``
measures both paths and the recall against an exact scan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import connection, transaction

from memory.selectors.search.scope import Part
from memory.vector_indexes import dense_condition, dense_distance, vector_index_ready

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


def dense_leg(
    parts: Sequence[Part], filters: Part, literal: str, embedder_id: str, dims: int, depth: int
) -> tuple[list[tuple], list[str]]:
    """``(id, similarity)`` best first over all parts (at most ``depth``), and the path each
    part took."""
    dense: list[tuple] = []
    paths: list[str] = []
    for part in parts:
        rows, path = _dense_part(part, filters, literal, embedder_id, dims, depth)
        dense.extend(rows)
        paths.append(path)
    dense.sort(key=lambda row: (-row[1], str(row[0])))
    return dense[:depth], paths


def _dense_part(
    part: Part, filters: Part, literal: str, embedder_id: str, dims: int, depth: int
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


def _part_rows_estimate(cursor, part: Part) -> float:
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


def similarities(literal: str | None, embedder_id: str, dims: int, ids: list) -> dict:
    """Cosine similarity of the given rows to the query (rows of the query's embedder and
    width only)."""
    if not ids or literal is None:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, 1 - (m.embedding <=> %s::vector) FROM memory_memory m "
            f"WHERE m.id = ANY(%s) AND {dense_condition(embedder_id, dims, escape=True)}",
            [literal, list(ids)],
        )
        return dict(cursor.fetchall())
