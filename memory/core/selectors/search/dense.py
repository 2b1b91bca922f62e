"""The dense leg: cosine similarity between the query embedding and stored vectors.

Only vectors *of the same embedder_id* are compared (vectors of another model never are).
Each (embedder, width) has two HNSW indexes, over private rows and over shared rows
(:mod:`memory.core.vector_indexes`); a scope part (private rows of one agent; shared rows of
one company) walks the one its rows are in. pgvector filters HNSW results after the graph
walk, so a filter that keeps few of the index's rows starves the walk. While the index a
part walks holds up to ``EXACT_SCAN_MAX_ROWS`` live rows (the trigger-maintained totals of
``memory_bm25_scope_stats``, read with the query's lexemes in one planning round trip), the
part is scanned exactly (ordered by similarity, an expression HNSW cannot serve). Above it,
a part holding ``HNSW_MIN_SHARE`` of its index's rows or more (or more than
``PART_EXACT_MAX_ROWS``) is walked with HNSW first, with pgvector ≥ 0.8's iterative scan,
and a smaller part is scanned exactly. A walk that returns ``depth`` filtered rows found the
part's true nearest among its candidates, so it is kept; one that returns fewer is replaced
by the exact scan of the part, in the same statement (the exact CTE is gated by the walk's
row count, so it only runs when the walk came back short).

**The walk's width follows the part's selectivity.** A filtered walk of a part holding share
``s`` of its index's rows keeps ≈ ``s`` of the candidates it visits, so a first walk of
width ``ef`` sees ≈ ``ef · s`` of the part's rows. Each walked part needs
``HNSW_COVERAGE × depth / s`` (at least ``HNSW_EF_SEARCH_FIRST``, at most pgvector's
``HNSW_EF_SEARCH`` = 1000) so that its first walk already holds ``HNSW_COVERAGE`` times the
rows the page needs; the iterative resume may visit up to ``HNSW_SCAN_COVERAGE × depth / s``
tuples (at least ``HNSW_MAX_SCAN_TUPLES``). ``hnsw.ef_search`` and
``hnsw.max_scan_tuples`` are one per statement, so the statement takes **the widest any of
its walked parts needs** (a wide walk costs a large part a little time, a narrow one costs a
small part recall). A part that would need more than the cap (share < ``HNSW_COVERAGE`` ×
depth / 1000, 30 % at depth 50) is scanned exactly while it holds at most
``NARROW_PART_EXACT_MAX_ROWS`` rows; a larger one walks at the cap (its recall can fall below
what the exact scan gives: the cost of a scan grows with the rows). Without the iterative
scan, every walk is at the cap.
The constants were chosen on the synthetic 1M data set's dev seed (``python bench/scale_1m.py
--memories 1000000 --seed 101 --sweep 30 --queries 20 --baseline``,
``bench/results/scale_1m_dev_sweep.json``), not on the evaluation seed: each part walked at
several first-walk widths against its own exact scan (measured:
docs/benchmarks/scale.md#dev-seed-sweep). A part of 40 % levels off near the width
``HNSW_COVERAGE`` 6 gives it; no width brought the company's shared rows (5 % of an index over
all rows) to the recall target, so that part was scanned exactly. Since migration 0022 the
shared rows have their own index, where one company's are most of it, and are walked there
(measured: docs/benchmarks/scale.md#evaluation-seed). ``bench/scale_1m.py`` measures both
paths and the recall against an exact scan.

The leg is a set of CTEs (:func:`dense_ctes`) in the one search statement the pipeline
sends (:mod:`memory.core.selectors.search.legs`); the walk's settings (``hnsw.ef_search``, the
iterative scan, ``enable_sort = off`` so the planner takes the index-ordered scan) are
transaction-local settings sent in the same query string (:func:`hnsw_settings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.core.selectors.search.scope import Part
from memory.core.vector_indexes import dense_condition, dense_distance

#: Up to this many rows in the whole table, the dense leg scans the scope exactly; above it
#: the HNSW walk answers first (measured:
#: docs/benchmarks/latency.md#10k-memories-for-one-agent-by-stage).
EXACT_SCAN_MAX_ROWS = 5_000
#: Above ``EXACT_SCAN_MAX_ROWS``, a part the planner estimates at this share of the table or
#: more (or at more than ``PART_EXACT_MAX_ROWS`` rows) is walked with HNSW first; a smaller
#: part is scanned exactly (a walk would mostly return other agents' rows).
HNSW_MIN_SHARE = 0.25
PART_EXACT_MAX_ROWS = 20_000
#: A part whose walk would need more than pgvector's widest (``HNSW_COVERAGE`` × depth /
#: share > ``HNSW_EF_SEARCH``) is scanned exactly while it holds at most this many rows (the
#: exact scan's cost grows with the part's rows; measured:
#: docs/benchmarks/scale.md#dev-seed-sweep).
NARROW_PART_EXACT_MAX_ROWS = 64_000
#: The first HNSW walk's width is at least this (and at least ``HNSW_EF_DEPTH_FACTOR`` × the
#: leg depth), and grows with 1 / the walked part's share of the table (module docstring).
HNSW_EF_SEARCH_FIRST = 200
HNSW_EF_DEPTH_FACTOR = 4
#: A walked part's first walk holds this many times the page's rows (≈ width × share).
HNSW_COVERAGE = 6.0
#: pgvector's maximum; the widened walk returns at most this many rows before filtering.
HNSW_EF_SEARCH = 1000
#: pgvector ≥ 0.8 iterative index scans: a filtered walk that comes back short resumes the
#: graph walk (in exact distance order, ``strict_order``) until it has ``depth`` rows or has
#: visited ``hnsw.max_scan_tuples`` tuples (at least ``HNSW_MAX_SCAN_TUPLES``, and
#: ``HNSW_SCAN_COVERAGE`` × depth / the smallest walked share), instead of returning short
#: and being redone wider. Used on the HNSW path only (parts of moderate or large share);
#: small parts keep the exact scan, which is faster there (measured:
#: docs/benchmarks/latency.md#iterative-index-scans).
HNSW_ITERATIVE_SCAN = "strict_order"
HNSW_MAX_SCAN_TUPLES = 20_000
HNSW_SCAN_COVERAGE = 4.0

EXACT, HNSW, HNSW_EXACT = "exact", "hnsw", "hnsw+exact"

#: The query vector, bound once; every use reads it from the ``q`` CTE.
QUERY_VECTOR = "(SELECT v FROM q)"


@dataclass(frozen=True)
class ScopeRows:
    """Live row counts that choose each part's dense path: the table's private and shared
    rows (what each of an embedder's two HNSW indexes holds, near enough: the totals count
    every embedder) and each part's."""

    private: int
    shared: int
    parts: tuple[int, ...]

    @property
    def table(self) -> int:
        return self.private + self.shared

    def index_rows(self, parts: Sequence[Part]) -> list[int]:
        """The rows of the index each part walks (shared rows' or private rows')."""
        return [self.shared if part.shared else self.private for part in parts]


def scope_rows_sql(parts: Sequence[Part]) -> tuple[list[str], list]:
    """SQL expressions for the table's live private rows, its live shared rows and each
    part's (read by :func:`scope_rows`), from the trigger-maintained totals (exact counts
    of non-superseded rows, read without touching the table)."""
    exprs = [
        "(SELECT coalesce(sum(s.n), 0) FROM memory_bm25_scope_stats s "
        f"WHERE {'' if shared else 'NOT '}s.is_shared)::bigint"
        for shared in (False, True)
    ]
    params: list = []
    for part in parts:
        exprs.append(
            "(SELECT coalesce(sum(m.n), 0) "
            f"FROM memory_bm25_scope_stats m WHERE {part.sql})::bigint"
        )
        params += part.params
    return exprs, params


def scope_rows(values: Sequence[int]) -> ScopeRows:
    """The values of :func:`scope_rows_sql`'s expressions, in order."""
    private, shared, *parts = (int(v) for v in values)
    return ScopeRows(private=private, shared=shared, parts=tuple(parts))


def needed_width(depth: int, share: float) -> float:
    """The first walk's width that holds ``HNSW_COVERAGE`` × depth rows of a part of
    ``share`` (uncapped: compare with ``HNSW_EF_SEARCH``)."""
    return HNSW_COVERAGE * depth / share if share > 0 else math.inf


def _per_part(index_rows: int | Sequence[int], part_rows: Sequence[int]) -> list[int]:
    if isinstance(index_rows, int):
        return [index_rows] * len(part_rows)
    if len(index_rows) != len(part_rows):
        raise ValueError("one index row count per part")
    return list(index_rows)


def choose_paths(
    index_rows: int | Sequence[int],
    part_rows: Sequence[int],
    *,
    depth: int,
    index_ready: Callable[[int], bool] = lambda part: True,
) -> list[str]:
    """How each part is searched: ``"exact"`` or ``"hnsw"`` (exact when the walk is short).

    ``index_rows``: the live rows of the index each part would walk (one number: the same
    for every part). ``index_ready(i)`` says whether part ``i``'s HNSW index can be walked
    (asked only when the part would walk it): until it is built, the part is scanned
    exactly.
    """
    paths = []
    totals = _per_part(index_rows, part_rows)
    for index, (total, rows) in enumerate(zip(totals, part_rows, strict=True)):
        if total <= EXACT_SCAN_MAX_ROWS:
            paths.append(EXACT)
            continue
        share = rows / total
        # A small share of the index (e.g. one of many agents): the walk would come back
        # short, and the part's own rows are cheap to scan exactly through its b-tree.
        small = share < HNSW_MIN_SHARE and rows <= PART_EXACT_MAX_ROWS
        # A share no walk pgvector allows covers (e.g. one company's shared rows among many
        # companies'): exact while the scan stays affordable.
        narrow = needed_width(depth, share) > HNSW_EF_SEARCH and rows <= NARROW_PART_EXACT_MAX_ROWS
        paths.append(EXACT if small or narrow or not index_ready(index) else HNSW)
    return paths


def ef_search(depth: int, iterative: bool, shares: Sequence[float] = ()) -> int:
    """The walk's width: at least ``HNSW_EF_SEARCH_FIRST`` and ``HNSW_EF_DEPTH_FACTOR`` ×
    depth, and ``HNSW_COVERAGE`` × depth / share for the smallest walked share (capped at
    pgvector's maximum); the widest walk when no iterative scan can resume a short one."""
    if not iterative:
        return HNSW_EF_SEARCH
    width = max(HNSW_EF_SEARCH_FIRST, HNSW_EF_DEPTH_FACTOR * depth)
    if shares:
        width = max(width, math.ceil(HNSW_COVERAGE * depth / max(min(shares), 1e-9)))
    return min(HNSW_EF_SEARCH, width)


def max_scan_tuples(depth: int, shares: Sequence[float] = ()) -> int:
    """How far the iterative scan may resume: ``HNSW_SCAN_COVERAGE`` × depth / the smallest
    walked share, at least ``HNSW_MAX_SCAN_TUPLES``."""
    if not shares:
        return HNSW_MAX_SCAN_TUPLES
    return max(HNSW_MAX_SCAN_TUPLES, math.ceil(HNSW_SCAN_COVERAGE * depth / max(min(shares), 1e-9)))


def walked_shares(
    index_rows: int | Sequence[int], part_rows: Sequence[int], paths: Sequence[str]
) -> list[float]:
    """Each walked part's share of its index's live rows (what its filter keeps of a walk)."""
    return [
        rows / total if total > 0 else 1.0
        for total, rows, path in zip(
            _per_part(index_rows, part_rows), part_rows, paths, strict=True
        )
        if path == HNSW
    ]


def hnsw_settings(
    depth: int,
    iterative: bool,
    *,
    index_rows: int | Sequence[int] = 0,
    part_rows: Sequence[int] = (),
    paths: Sequence[str] = (),
) -> dict[str, str]:
    """Transaction-local settings for a statement that walks the HNSW index: the widest walk
    any walked part (``paths[i] == "hnsw"``, ``part_rows[i]`` of ``index_rows[i]``) needs."""
    shares = walked_shares(index_rows, part_rows, paths) if paths else []
    settings = {"hnsw.ef_search": str(ef_search(depth, iterative, shares)), "enable_sort": "off"}
    if iterative:
        settings["hnsw.iterative_scan"] = HNSW_ITERATIVE_SCAN
        settings["hnsw.max_scan_tuples"] = str(max_scan_tuples(depth, shares))
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
        # embedder's partial HNSW indexes (memory.core.vector_indexes; the part's SQL says
        # whether its rows are private or shared) so the walk can use one.
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
    for index, part in enumerate(parts):
        # The later windows of the part's chunked rows (memory.core.chunking), scanned
        # exactly from the partial index of chunked rows; a memory scores by its best one.
        ctes.append(
            f"chunks_{index} AS (SELECT ch.memory_id AS id, "
            f"max(1 - (ch.embedding <=> {QUERY_VECTOR})) AS sim "
            "FROM memory_memory m JOIN memory_memorychunk ch ON ch.memory_id = m.id "
            f"WHERE {part.sql} AND {filters.sql} AND m.chunk_count > 0 "
            f"AND {chunk_condition(embedder_id, dims)} "
            "GROUP BY ch.memory_id ORDER BY sim DESC, id LIMIT %s)"
        )
        params += [*part.params, *filters.params, depth]
        branches.append(f"SELECT id, sim FROM chunks_{index}")
    ctes.append(
        f"dense AS (SELECT id, max(sim) AS sim FROM ({' UNION ALL '.join(branches)}) AS parts "
        "GROUP BY id ORDER BY sim DESC, id LIMIT %s)"
    )
    params += [*branch_params, depth]
    return ctes, params, " UNION ALL ".join(walks)


def chunk_condition(embedder_id: str, dims: int, alias: str = "ch") -> str:
    """Chunk rows of the query's embedder and width (a statement with parameters: ``%``
    doubled)."""
    return dense_condition(embedder_id, dims, alias, escape=True)


def chunk_similarity(embedder_id: str, dims: int) -> str:
    """The best similarity of row ``m``'s chunks to the query (NULL when it has none)."""
    return (
        "CASE WHEN m.chunk_count > 0 THEN (SELECT max(1 - (ch.embedding <=> "
        f"{QUERY_VECTOR})) FROM memory_memorychunk ch WHERE ch.memory_id = m.id AND "
        f"{chunk_condition(embedder_id, dims)}) END"
    )
