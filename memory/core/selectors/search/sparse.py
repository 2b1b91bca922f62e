"""The sparse leg: Okapi BM25 computed in one SQL statement over the scope.

k1 1.2, b 0.75, idf ``ln(1 + (N − df + 0.5)/(df + 0.5))`` (:mod:`synthorg.retrieval.bm25`):
N and the average document length over the filtered scope, df and tf from the
trigger-maintained ``search_vector`` (english stemming, stop words removed) and
``doc_length``. Without metadata filters, N and the length sum come from the
trigger-maintained per-(company, agent, is_shared) totals in ``memory_bm25_scope_stats``
minus the scope's expired rows (migration 0006) instead of a scan of the scope; with filters
the scope is scanned. Query lexemes that are common (ANALYZE's share of the table's rows
≥ ``COMMON_LEXEME_SHARE``, or that share read as if concentrated in the scope ≥
``CONCENTRATED_LEXEME_SHARE``) only score candidates, they do not find them (see
:func:`common_lexemes`).

The leg is a set of CTEs (:func:`sparse_ctes`) in the one search statement the pipeline sends
(:mod:`memory.core.selectors.search.legs`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memory.core.selectors.search.scope import Part, union_sql
from synthorg.db.replicas import read_connection
from synthorg.retrieval import bm25
from synthorg.retrieval import lexemes as lexeme_sql

_BM25_CTES = """
stats AS ({stats}),
matched AS (
    SELECT m.id, m.doc_length, t.lexeme, {tf} AS tf
      FROM memory_memory m, {terms}
     WHERE ({match_scope}) AND {filters} AND m.search_vector @@ %s::tsquery
),
-- df of the matching lexemes over the candidates (exact: every row holding one is one);
-- a common lexeme (not used to find candidates) gets its table share × N instead
df AS (
    SELECT lexeme, count(*)::float8 AS df FROM matched
     WHERE lexeme <> ALL(%s::text[]) GROUP BY lexeme
    UNION ALL
    SELECT c.lexeme, greatest(1.0, c.share * stats.n)
      FROM unnest(%s::text[], %s::float8[]) AS c(lexeme, share) CROSS JOIN stats
),
sparse AS (
    SELECT matched.id, sum({score}) AS score
      FROM matched JOIN df USING (lexeme) CROSS JOIN stats
     GROUP BY matched.id
     ORDER BY score DESC, matched.id
     LIMIT %s
)"""

_SCORE = bm25.sql_score(
    tf="matched.tf", df="df.df", n="stats.n", dl="matched.doc_length", avgdl="stats.avgdl"
)

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
#: unchanged (measured: docs/benchmarks/latency.md#10k-memories-for-one-agent-by-stage).
COMMON_LEXEME_SHARE = 0.2
#: A lexeme is also common when, read as if all its rows were in the scope (its share of
#: the table ÷ the scope's share of the table), it would be in at least this share of the
#: scope's rows: a lexeme one agent uses in nearly every memory (its user's name) is only
#: 20 % of a table that agent's rows are 20 % of, but in all of that agent's rows (LoCoMo: a
#: speaker's name, whose rows were most of the search statement's time). The bound
#: overstates the share of a lexeme spread over many scopes, so it takes a higher share
#: than the table's rule. Chosen on the dev split (``bench/retrieval.py``, LoCoMo dev, five
#: agents in one table): lower shares prune topic words concentrated in one conversation too
#: and cost recall, this one prunes the names alone (measured:
#: docs/benchmarks/latency.md#smaller-levers-in-the-search-path). The share a
#: common lexeme scores with is this estimate.
CONCENTRATED_LEXEME_SHARE = 0.8
#: A scope of more live rows than this does not help find the query's rows: its b-tree
#: indexes would give a bitmap of every row of the scope, and AND-ing it with the lexemes'
#: posting lists costs more than checking the scope on the rows the lexemes find. The
#: planner takes the AND whatever the scope's size (its cost model counts the heap pages the
#: AND saves, not the bitmap's entries), so above this the scope is written as a filter
#: (:meth:`Part.as_filter`): a b-tree bitmap costs per scope row, the filter per row the
#: lexemes find and it drops, and above this bound the bitmap costs more (measured:
#: docs/benchmarks/scale.md#the-sparse-legs-scope-bitmap-or-filter).
SPARSE_SCOPE_BITMAP_MAX_ROWS = 100_000
#: How long the table's lexeme statistics are reused before pg_stats is read again.
LEXEME_STATS_TTL_S = 300.0
_lexeme_stats: tuple[float, dict[str, float]] = (float("-inf"), {})


def query_lexemes(text: str) -> list[str]:
    """The distinct english lexemes of ``text`` (what the sparse leg matches on)."""
    with read_connection().cursor() as cursor:
        return lexeme_sql.query_lexemes(cursor, text)


def common_lexemes(lexemes: Sequence[str], scope_share: float = 1.0) -> dict[str, float]:
    """``lexeme → estimated share of the scope's rows`` for the query lexemes that are
    common in a scope holding ``scope_share`` of the table's rows (see above)."""
    global _lexeme_stats
    read_at, shares = _lexeme_stats
    if time.monotonic() - read_at > LEXEME_STATS_TTL_S:
        with read_connection().cursor() as cursor:
            # ANALYZE keeps the most common lexemes of a tsvector column with their share of
            # rows (most_common_elem_freqs ends with 3 summary numbers: skipped by zip).
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = 'memory_memory' "
                "AND attname = 'search_vector'"
            )
            row = cursor.fetchone()
        shares = dict(zip(row[0], row[1], strict=False)) if row and row[0] else {}
        _lexeme_stats = (time.monotonic(), shares)
    scope_share = min(1.0, max(scope_share, 1e-9))
    common = {}
    for lexeme in lexemes:
        share = shares.get(lexeme, 0.0)
        estimate = min(1.0, share / scope_share)
        if share >= COMMON_LEXEME_SHARE or estimate >= CONCENTRATED_LEXEME_SHARE:
            common[lexeme] = estimate
    return common


def sparse_ctes(
    parts: Sequence[Part],
    filters: Part,
    lexemes: Sequence[str],
    depth: int,
    scope_share: float = 1.0,
    scope_rows: int = 0,
) -> tuple[str, list]:
    """CTEs (and their parameters, in order) ending in ``sparse(id, score)``: the BM25 of
    the scope's rows holding the query's ``lexemes``, best first, at most ``depth``
    (``scope_share``: the scope's live rows over the table's, for :func:`common_lexemes`;
    ``scope_rows``: its live rows, for ``SPARSE_SCOPE_BITMAP_MAX_ROWS``)."""
    scope, scope_params = union_sql(parts)
    match_scope = scope
    if scope_rows > SPARSE_SCOPE_BITMAP_MAX_ROWS:
        match_scope, _ = union_sql([part.as_filter() for part in parts])
    common = common_lexemes(lexemes, scope_share)
    if len(common) == len(lexemes):
        common = {}
    finders = [lexeme for lexeme in lexemes if lexeme not in common]
    if filters.live_only:
        stats = _STATS_TOTALS_SQL.format(scope=scope)
        stats_params = [*scope_params, *scope_params, filters.params[0]]
    else:
        stats = _STATS_SCAN_SQL.format(scope=scope, filters=filters.sql)
        stats_params = [*scope_params, *filters.params]
    sql = _BM25_CTES.format(
        stats=stats,
        match_scope=match_scope,
        filters=filters.sql,
        score=_SCORE,
        tf=bm25.SQL_TF,
        terms=bm25.sql_query_terms("m.search_vector"),
    )
    params = [
        *stats_params,
        list(lexemes),
        *scope_params,
        *filters.params,
        lexeme_sql.or_tsquery(finders),
        list(common),
        list(common),
        list(common.values()),
        depth,
    ]
    return sql, params
