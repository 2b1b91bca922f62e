"""Org facts ranked by relevance to a context, and the org part of an agent's prompt.

Ranking runs over the facts live at the asked time, each represented by its current
PUBLISH log row (the one whose ``operation_id`` a result carries):

* sparse leg: BM25 (k1 1.2, b 0.75, :mod:`synthorg.retrieval.bm25`) in Postgres over the
  english ``tsvector`` of each fact's content, with document frequencies and average length
  taken from the live set. Now (no ``as_of``): over the :class:`~orgmemory.models.OrgFact`
  snapshot rows, found through the GIN index of the live ones, with N and the length sum
  read from the trigger-maintained ``orgmemory_fact_bm25_stats`` (migration 0006) — no
  query reads every live fact. As of a past time: over the PUBLISH rows live then
  (:func:`orgmemory.selectors.facts.live_operations`), so a past state is ranked as it
  would have been then;
* dense leg (when an embedder is available): cosine similarity of stored row vectors, an
  exact scan in SQL of the live facts' vectors (org memory is small; no HNSW needed),
  kept above a cosine floor: the company's
  ``memory.retrieval.min_relevance`` under ``linear`` fusion (where it is a cosine
  threshold), the linear default 0.3 under ``rrf`` (where min_relevance thresholds the
  fused score instead);
* fusion: reciprocal rank fusion (k = 60), normalised to 0..1 by the best achievable
  score for the legs used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from orgmemory.domain import OrgMemoryQuery
from orgmemory.embedding import embed_query_text
from orgmemory.query_vectors import transform_query_vector
from orgmemory.selectors.facts import LOG_TABLE, FactView, fact_views, live_operations
from orgmemory.selectors.policies import CorePolicyBlock, core_policy_block_of, policies
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import LINEAR_DEFAULTS, FusionStrategy
from synthorg.db.prepared import execute_prepared
from synthorg.db.replicas import read_connection
from synthorg.enums import OrgFactCategory
from synthorg.retrieval import bm25
from synthorg.retrieval import lexemes as lexeme_sql
from synthorg.retrieval.fusion import DEFAULT_RRF_K, rrf_scores
from synthorg.retrieval.vectors import vector_literal

RRF_K = DEFAULT_RRF_K

EXTENDED_CATEGORIES: frozenset[OrgFactCategory] = frozenset(OrgFactCategory) - {
    OrgFactCategory.CORE_POLICY
}


@dataclass(frozen=True)
class PromptFact:
    fact_id: str
    category: str
    content: str
    score: float


@dataclass(frozen=True)
class OrgPromptContext:
    core_policies: list[str] = field(default_factory=list)
    facts: list[PromptFact] = field(default_factory=list)
    #: ``core_policies`` as the pinned block, with its revision (``None`` without policies)
    core_block: CorePolicyBlock | None = None


_SCORE = bm25.sql_score(tf="tf.f", df="df.n", n="%(n)s", dl="tf.dl", avgdl="%(avgdl)s")


def _bm25(live: list[tuple], context: str, pool: int) -> list[tuple]:
    """``(operation_id, score)`` of the ``pool`` best BM25 matches among ``live`` rows.

    Document frequencies and the average length are those of ``live`` itself.
    """
    if not live:
        return []
    with read_connection().cursor() as cursor:
        terms = lexeme_sql.query_lexemes(cursor, context)
    if not terms:
        return []
    n_docs = float(len(live))
    avgdl = max(sum(row[1] for row in live) / n_docs, 1.0)
    sql = f"""
    WITH tf AS MATERIALIZED (
        SELECT l.operation_id AS id, t.lexeme AS term,
               coalesce(array_length(t.positions, 1), 1)::float AS f,
               l.doc_length::float AS dl
          FROM unnest(%(ids)s::uuid[]) AS c(id)
          JOIN {LOG_TABLE} l ON l.operation_id = c.id
          CROSS JOIN LATERAL unnest(l.search_vector) AS t
         WHERE t.lexeme = ANY(%(terms)s::text[])
    ),
    df AS MATERIALIZED (SELECT term, count(*)::float AS n FROM tf GROUP BY term)
    SELECT tf.id,
           sum({_SCORE}) AS score
      FROM tf JOIN df ON df.term = tf.term
     GROUP BY tf.id
     ORDER BY score DESC, tf.id
     LIMIT %(pool)s
    """
    params = {
        "ids": [row[0] for row in live],
        "terms": terms,
        "n": n_docs,
        "avgdl": avgdl,
        "pool": pool,
    }
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _dense(live: list[tuple], embedded, pool: int, min_similarity: float) -> list[tuple]:
    """``(operation_id, cosine similarity)`` of the best dense matches among ``live`` rows."""
    if not live:
        return []
    source = (
        "unnest(%(ids)s::uuid[]) AS c(id) JOIN orgmemory_factversionembedding e "
        "ON e.operation_id = c.id"
    )
    return _exact_dense(source, {"ids": [row[0] for row in live]}, embedded, pool, min_similarity)


def _exact_dense(
    source: str, source_params: dict, embedded, pool: int, min_similarity: float
) -> list[tuple]:
    """The exact nearest fact versions (vectors aliased ``e``) among the rows ``source``
    yields, kept at or above ``min_similarity``: only vectors of the query's embedder and
    width are compared (an exact scan: no index to match, so the embedder id stays a
    parameter). A long version scores by its best window (its chunks, of the same embedder)."""
    embedder_id, vector = embedded
    sql = f"""
    WITH q AS (SELECT %(q)s::vector AS v)
    SELECT e.operation_id,
           GREATEST(
               1 - (e.embedding <=> (SELECT v FROM q)),
               CASE WHEN e.chunk_count > 0 THEN
                   (SELECT max(1 - (ch.embedding <=> (SELECT v FROM q)))
                      FROM orgmemory_factversionchunk ch
                     WHERE ch.operation_id = e.operation_id AND ch.embedder_id = e.embedder_id
                       AND vector_dims(ch.embedding) = %(dims)s)
               END
           ) AS similarity
      FROM {source}
     WHERE e.embedder_id = %(embedder)s AND vector_dims(e.embedding) = %(dims)s
     ORDER BY similarity DESC, e.operation_id
     LIMIT %(pool)s
    """
    params = {
        "q": vector_literal(vector),
        "embedder": embedder_id,
        "dims": int(vector.shape[0]),
        "pool": pool,
    }
    with read_connection().cursor() as cursor:
        cursor.execute(sql, params | source_params)
        return [(op, sim) for op, sim in cursor.fetchall() if sim >= min_similarity]


def _effective_limit(config: CompanyConfig, limit: int | None) -> int:
    ceiling = config.org_memory.extended_store.max_retrieved_per_query
    return ceiling if limit is None else max(1, min(limit, ceiling))


def query_facts(
    *, company: Company, query: OrgMemoryQuery, config: CompanyConfig | None = None
) -> list[FactView]:
    """Facts live at ``query.as_of`` ranked by relevance to ``query.context``.

    ``categories`` defaults to the extended categories (everything but core_policy, which
    :func:`policies` returns unfiltered). At most ``max_retrieved_per_query`` results.
    Without a context: the most recently written facts, ``score`` ``None``. ``config``: the
    company's, when the caller has read it (read here otherwise).
    """
    config = config or company_config(company)
    limit = _effective_limit(config, query.limit)
    categories = sorted(
        str(c) for c in (query.categories if query.categories is not None else EXTENDED_CATEGORIES)
    )
    live: list[tuple] = []
    if query.as_of is not None:
        live = live_operations(company.pk, query.as_of, categories)
        if not live:
            return []
    if query.context is None:
        if query.as_of is None:
            return fact_views(_recent_current(company.pk, categories, limit))
        recent = sorted(live, key=lambda row: (row[2], str(row[0])), reverse=True)[:limit]
        return fact_views([row[0] for row in recent])

    retrieval = config.memory.retrieval
    pool = limit * retrieval.candidate_pool_multiplier
    if query.as_of is None:
        n_live, sparse = _bm25_current(company.pk, categories, query.context, pool)
        if not n_live:
            return []
    else:
        sparse = _bm25(live, query.context, pool)
    legs = [[op for op, _score in sparse]]
    embedded = embed_query_text(query.context, company=company, config=config)
    if embedded is not None:
        # the company's active query adapter, as for memories (orgmemory.query_vectors)
        embedded = (embedded[0], transform_query_vector(company, *embedded, config=config))
        floor = retrieval.min_relevance
        if retrieval.fusion_strategy is not FusionStrategy.LINEAR:
            floor = LINEAR_DEFAULTS["min_relevance"]
        if query.as_of is None:
            dense = _dense_current(company.pk, categories, embedded, pool, floor)
        else:
            dense = _dense(live, embedded, pool, floor)
        legs.append([op for op, _sim in dense])
    fused = rrf_scores(legs, k=RRF_K)
    best = len(legs) / (RRF_K + 1)
    ranked = sorted(fused.items(), key=lambda item: (-item[1], str(item[0])))[:limit]
    scores = {op: round(score / best, 6) for op, score in ranked}
    return fact_views([op for op, _score in ranked], scores)


# The current facts: the live snapshot rows of the company in the categories (each joined,
# where needed, to its current PUBLISH row through the log's unique (fact_id, version)).
_LIVE = "f.company_id = %(company)s AND f.retracted_at IS NULL AND f.category = ANY(%(categories)s)"
_CURRENT_SCORE = bm25.sql_score(
    tf="matched.tf", df="df.n", n="stats.n", dl="matched.dl", avgdl="stats.avgdl"
)
_CURRENT_TERMS = bm25.sql_query_terms("f.search_vector", "%(terms)s")
_CURRENT_BM25_SQL = f"""
WITH stats AS (
    SELECT coalesce(sum(s.n), 0)::float8 AS n,
           CASE WHEN sum(s.n) > 0 THEN greatest(sum(s.sum_doc_length)::float8 / sum(s.n), 1.0)
                ELSE 1.0 END AS avgdl
      FROM orgmemory_fact_bm25_stats s
     WHERE s.company_id = %(company)s AND s.category = ANY(%(categories)s)
),
matched AS MATERIALIZED (
    SELECT f.fact_id, f.version, f.doc_length::float8 AS dl, t.lexeme AS term,
           {bm25.SQL_TF} AS tf
      FROM orgmemory_orgfact f, {_CURRENT_TERMS}
     WHERE {_LIVE} AND f.search_vector @@ %(tsquery)s::tsquery
),
df AS MATERIALIZED (SELECT term, count(*)::float8 AS n FROM matched GROUP BY term),
scored AS (
    SELECT matched.fact_id, matched.version, sum({_CURRENT_SCORE}) AS score
      FROM matched JOIN df USING (term) CROSS JOIN stats
     GROUP BY matched.fact_id, matched.version
)
SELECT (SELECT n FROM stats), l.operation_id, scored.score
  FROM (SELECT 1) AS one
  LEFT JOIN (scored JOIN {LOG_TABLE} l
             ON l.fact_id = scored.fact_id AND l.version = scored.version) ON true
 ORDER BY scored.score DESC, l.operation_id
 LIMIT %(pool)s
"""


def _bm25_current(
    company_id: int, categories: list[str], context: str, pool: int
) -> tuple[int, list[tuple]]:
    """The number of live facts in ``categories``, and ``(operation_id, score)`` of the
    ``pool`` best BM25 matches among them (nothing is read per live fact: the matches come
    from the GIN index, N and the length sum from the maintained totals)."""
    # Prepared statements of the connection: they run on every context request.
    connection = read_connection()
    terms = lexeme_sql.query_lexemes_prepared(connection, context)
    if not terms:
        rows = execute_prepared(
            connection,
            "SELECT coalesce(sum(n), 0) FROM orgmemory_fact_bm25_stats "
            "WHERE company_id = %s AND category = ANY(%s)",
            [company_id, categories],
        )
        return int(rows[0][0]), []
    rows = execute_prepared(
        connection,
        _CURRENT_BM25_SQL,
        {
            "company": company_id,
            "categories": categories,
            "terms": terms,
            "tsquery": lexeme_sql.or_tsquery(terms),
            "pool": pool,
        },
    )
    return int(rows[0][0]), [(op, score) for _n, op, score in rows if op is not None]


def _dense_current(
    company_id: int, categories: list[str], embedded, pool: int, min_similarity: float
) -> list[tuple]:
    """``(operation_id, cosine similarity)`` of the best dense matches among the live facts
    (an exact scan of their vectors in SQL)."""
    source = (
        f"orgmemory_orgfact f JOIN {LOG_TABLE} l ON l.fact_id = f.fact_id "
        "AND l.version = f.version "
        "JOIN orgmemory_factversionembedding e ON e.operation_id = l.operation_id "
        f"AND {_LIVE}"
    )
    return _exact_dense(
        source, {"company": company_id, "categories": categories}, embedded, pool, min_similarity
    )


def _recent_current(company_id: int, categories: list[str], limit: int) -> list:
    """Operation ids of the ``limit`` most recently written live facts, newest first."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT l.operation_id FROM orgmemory_orgfact f "
            f"JOIN {LOG_TABLE} l ON l.fact_id = f.fact_id AND l.version = f.version "
            f"WHERE {_LIVE} ORDER BY l.timestamp DESC, l.operation_id DESC LIMIT %(limit)s",
            {"company": company_id, "categories": categories, "limit": limit},
        )
        return [row[0] for row in cursor.fetchall()]


def org_prompt_context(
    *,
    company: Company,
    context: str,
    limit: int | None = None,
    as_of: datetime | None = None,
    config: CompanyConfig | None = None,
) -> OrgPromptContext:
    """The organisational part of an agent's prompt context.

    Contract (for the memory app's ``POST /api/v1/memories/context``):

    * ``core_policies``: every core policy text, always, never filtered or truncated by
      relevance or ``limit`` — the company config's ``org_memory.core_policies`` first (in
      config order), then live core_policy facts (oldest first). ``as_of`` applies to the
      facts only (the config has no history).
    * ``facts``: the extended facts (adr, procedure, convention, entity_definition) live at
      ``as_of`` (default now) most relevant to ``context`` — BM25 fused with embeddings
      when an embedder is available — best first, each with ``fact_id`` (str),
      ``category``, ``content`` and ``score`` (0..1, higher is more relevant). At most
      ``limit`` items, capped by ``org_memory.extended_store.max_retrieved_per_query``
      (which is also the default). A blank ``context`` gives no facts.
    * Only ``company``'s data is read. Raises nothing for valid arguments.
    * ``config``: the company's parsed config when the caller has read it (a context
      request reads it once and hands it down); read here otherwise, once.

    Facts are content written by agents and humans of the company; the caller should fence
    them as untrusted text when packing a prompt.
    """
    config = config or company_config(company)
    items = policies(company=company, as_of=as_of, config=config)
    core = [policy.content for policy in items]
    block = core_policy_block_of(items)
    if not (context or "").strip():
        return OrgPromptContext(core_policies=core, facts=[], core_block=block)
    found = query_facts(
        company=company,
        query=OrgMemoryQuery(
            context=context,
            categories=EXTENDED_CATEGORIES,
            limit=_effective_limit(config, limit),
            as_of=as_of,
        ),
        config=config,
    )
    facts = [
        PromptFact(
            fact_id=str(view.fact_id),
            category=view.category,
            content=view.content,
            score=view.score or 0.0,
        )
        for view in found
    ]
    return OrgPromptContext(core_policies=core, facts=facts, core_block=block)
