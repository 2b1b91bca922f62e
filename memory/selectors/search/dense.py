"""The dense leg: cosine similarity between the query embedding and stored vectors.

Only vectors *of the same embedder_id* are compared (vectors of another model never are).
pgvector filters HNSW results after the graph walk, so a filter that keeps few rows starves
the index. While the whole table holds up to ``EXACT_SCAN_MAX_ROWS`` live rows (the
trigger-maintained totals of ``memory_bm25_scope_stats``, read with the query's lexemes in
one planning round trip), each part of the scope (private rows of one agent;
shared rows of one company) is scanned exactly (ordered by similarity, an expression HNSW
cannot serve). Above it, a part holding ``HNSW_MIN_SHARE`` of the table's rows or more (or
more than ``PART_EXACT_MAX_ROWS``) is walked with HNSW first (``hnsw.ef_search`` 200,
with pgvector ≥ 0.8's iterative scan, 1000 without) with the part's filters, and a smaller
part is scanned exactly. A walk that returns ``depth`` filtered rows found the part's true
nearest among its candidates, so it is kept; one that returns fewer is replaced by the
exact scan of the part, in the same statement (the exact CTE is gated by the walk's row
count, so it only runs when the walk came back short). ``bench/scale_search.py`` measures
both paths and the recall against an exact scan.

The leg is a set of CTEs (:func:`dense_ctes`) in the one search statement the pipeline
sends (:mod:`memory.selectors.search.legs`); the walk's settings (``hnsw.ef_search``, the
iterative scan, ``enable_sort = off`` so the planner takes the index-ordered scan) are
transaction-local settings sent in the same query string (:func:`hnsw_settings`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory.selectors.search.scope import Part
from memory.vector_indexes import dense_condition, dense_distance

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

EXACT, HNSW, HNSW_EXACT = "exact", "hnsw", "hnsw+exact"

#: The query vector, bound once; every use reads it from the ``q`` CTE.
QUERY_VECTOR = "(SELECT v FROM q)"


def scope_rows_sql(parts: Sequence[Part]) -> tuple[list[str], list]:
    """SQL expressions for the table's live rows and each part's, from the trigger-maintained
    totals (exact counts of non-superseded rows, read without touching the table)."""
    exprs = ["(SELECT coalesce(sum(s.n), 0) FROM memory_bm25_scope_stats s)::bigint"]
    params: list = []
    for part in parts:
        exprs.append(
            "(SELECT coalesce(sum(m.n), 0) "
            f"FROM memory_bm25_scope_stats m WHERE {part.sql})::bigint"
        )
        params += part.params
    return exprs, params


def choose_paths(
    table_rows: int, part_rows: Sequence[int], *, index_ready: Callable[[], bool] = lambda: True
) -> list[str]:
    """How each part is searched: ``"exact"`` or ``"hnsw"`` (exact when the walk is short).

    ``index_ready`` says whether the query embedder's HNSW index can be walked (asked only
    when a part would walk it): until it is built, every part is scanned exactly.
    """
    if table_rows <= EXACT_SCAN_MAX_ROWS:
        return [EXACT] * len(part_rows)
    # A small share of the index (e.g. one of many agents): the walk would come back short,
    # and the part's own rows are cheap to scan exactly through its b-tree.
    paths = [
        EXACT if rows < HNSW_MIN_SHARE * table_rows and rows <= PART_EXACT_MAX_ROWS else HNSW
        for rows in part_rows
    ]
    if HNSW in paths and not index_ready():
        return [EXACT] * len(part_rows)
    return paths


def ef_search(depth: int, iterative: bool) -> int:
    """The walk's width: at least ``HNSW_EF_DEPTH_FACTOR`` × depth; the widest walk when no
    iterative scan can resume a short one."""
    if not iterative:
        return HNSW_EF_SEARCH
    return min(HNSW_EF_SEARCH, max(HNSW_EF_SEARCH_FIRST, HNSW_EF_DEPTH_FACTOR * depth))


def hnsw_settings(depth: int, iterative: bool) -> dict[str, str]:
    """Transaction-local settings for a statement that walks the HNSW index."""
    settings = {"hnsw.ef_search": str(ef_search(depth, iterative)), "enable_sort": "off"}
    if iterative:
        settings["hnsw.iterative_scan"] = HNSW_ITERATIVE_SCAN
        settings["hnsw.max_scan_tuples"] = str(HNSW_MAX_SCAN_TUPLES)
    return settings


def dense_ctes(
    parts: Sequence[Part],
    paths: Sequence[str],
    filters: Part,
    embedder_id: str,
    dims: int,
    depth: int,
) -> tuple[list[str], list, str]:
    """CTEs (and their parameters, in order) ending in ``dense(id, sim)``, best first, at
    most ``depth``; and the SQL of one row per part telling whether its walk filled the page.
    Reads the query vector from the ``q`` CTE."""
    ctes: list[str] = []
    params: list = []
    branches: list[str] = []
    branch_params: list = []
    walks: list[str] = []
    for index, (part, path) in enumerate(zip(parts, paths, strict=True)):
        # Only vectors of the query's embedder and width; written as the predicate of that
        # embedder's partial HNSW index (memory.vector_indexes) so the walk can use it.
        where = (
            f"{part.sql} AND {filters.sql} AND {dense_condition(embedder_id, dims, escape=True)}"
        )
        where_params = [*part.params, *filters.params]
        exact = (
            f"SELECT m.id, 1 - (m.embedding <=> {QUERY_VECTOR}) AS sim FROM memory_memory m "
            f"WHERE {where} {{gate}}ORDER BY sim DESC, m.id LIMIT %s"
        )
        if path == EXACT:
            # Ordering by the similarity (not by the raw distance operator) is something the
            # HNSW index cannot serve, so the planner reads the part's rows through its
            # b-tree and sorts: an exact top-k over exactly the rows the filters keep.
            ctes.append(f"dense_{index} AS ({exact.format(gate='')})")
            params += [*where_params, depth]
            branches.append(f"SELECT id, sim FROM dense_{index}")
            continue
        walk = f"walk_{index}"
        ctes.append(
            f"{walk} AS MATERIALIZED (SELECT m.id, 1 - (m.embedding <=> {QUERY_VECTOR}) AS sim "
            f"FROM memory_memory m WHERE {where} "
            f"ORDER BY {dense_distance(dims, QUERY_VECTOR)} LIMIT %s)"
        )
        params += [*where_params, depth]
        # An uncorrelated condition: a one-time filter, so the exact scan only runs when the
        # walk came back short.
        short = f"(SELECT count(*) FROM {walk}) < %s"
        ctes.append(f"dense_{index} AS ({exact.format(gate=f'AND {short} ')})")
        params += [*where_params, depth, depth]
        branches.append(f"SELECT id, sim FROM {walk} WHERE NOT {short}")
        branch_params.append(depth)
        branches.append(f"SELECT id, sim FROM dense_{index}")
        walks.append(f"SELECT {index} AS part, (SELECT count(*) FROM {walk}) AS walked")
    ctes.append(
        f"dense AS (SELECT id, sim FROM ({' UNION ALL '.join(branches)}) AS parts "
        "ORDER BY sim DESC, id LIMIT %s)"
    )
    params += [*branch_params, depth]
    return ctes, params, " UNION ALL ".join(walks)
