"""Org facts ranked by relevance to a context, and the org part of an agent's prompt.

Ranking runs over the PUBLISH log rows live at the asked time
(:func:`orgmemory.selectors.facts.live_operations`):

* sparse leg: BM25 (k1 1.2, b 0.75, :mod:`synthorg.retrieval.bm25`) in Postgres over each
  row's english ``tsvector``, with document frequencies and average length taken from the
  same set (so a past state is ranked as it would have been then);
* dense leg (when an embedder is available): cosine similarity of stored row vectors,
  exact (org memory is small; no HNSW needed), kept above a cosine floor: the company's
  ``memory.retrieval.min_relevance`` under ``linear`` fusion (where it is a cosine
  threshold), the linear default 0.3 under ``rrf`` (where min_relevance thresholds the
  fused score instead);
* fusion: reciprocal rank fusion (k = 60), normalised to 0..1 by the best achievable
  score for the legs used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from orgmemory.domain import OrgMemoryQuery
from orgmemory.embedding import embed_text
from orgmemory.selectors.facts import LOG_TABLE, FactView, fact_views, live_operations
from orgmemory.selectors.policies import policies
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.company_config import LINEAR_DEFAULTS, FusionStrategy
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


_SCORE = bm25.sql_score(tf="tf.f", df="df.n", n="%(n)s", dl="tf.dl", avgdl="%(avgdl)s")


def _bm25(live: list[tuple], context: str, pool: int) -> list[tuple]:
    """``(operation_id, score)`` of the ``pool`` best BM25 matches among ``live`` rows.

    Document frequencies and the average length are those of ``live`` itself.
    """
    if not live:
        return []
    with connection.cursor() as cursor:
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
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _dense(live: list[tuple], embedded, pool: int, min_similarity: float) -> list[tuple]:
    """``(operation_id, cosine similarity)`` of the best dense matches (exact search)."""
    if not live:
        return []
    embedder_id, vector = embedded
    literal = vector_literal(vector)
    # Only vectors of the query's embedder and width are compared (an exact scan over the
    # live versions: no index to match, so the embedder id stays a parameter).
    sql = """
    SELECT e.operation_id, 1 - (e.embedding <=> %(q)s::vector) AS similarity
      FROM unnest(%(ids)s::uuid[]) AS c(id)
      JOIN orgmemory_factversionembedding e ON e.operation_id = c.id
     WHERE e.embedder_id = %(embedder)s AND vector_dims(e.embedding) = %(dims)s
     ORDER BY e.embedding <=> %(q)s::vector, e.operation_id
     LIMIT %(pool)s
    """
    params = {
        "q": literal,
        "embedder": embedder_id,
        "dims": int(vector.shape[0]),
        "ids": [row[0] for row in live],
        "pool": pool,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(op, sim) for op, sim in cursor.fetchall() if sim >= min_similarity]


def _effective_limit(company: Company, limit: int | None) -> int:
    ceiling = company_config(company).org_memory.extended_store.max_retrieved_per_query
    return ceiling if limit is None else max(1, min(limit, ceiling))


def query_facts(*, company: Company, query: OrgMemoryQuery) -> list[FactView]:
    """Facts live at ``query.as_of`` ranked by relevance to ``query.context``.

    ``categories`` defaults to the extended categories (everything but core_policy, which
    :func:`policies` returns unfiltered). At most ``max_retrieved_per_query`` results.
    Without a context: the most recently written facts, ``score`` ``None``.
    """
    limit = _effective_limit(company, query.limit)
    categories = query.categories if query.categories is not None else EXTENDED_CATEGORIES
    live = live_operations(company.pk, query.as_of, categories)
    if not live:
        return []
    if query.context is None:
        recent = sorted(live, key=lambda row: (row[2], str(row[0])), reverse=True)[:limit]
        return fact_views([row[0] for row in recent])

    retrieval = company_config(company).memory.retrieval
    pool = limit * retrieval.candidate_pool_multiplier
    legs = [[op for op, _score in _bm25(live, query.context, pool)]]
    embedded = embed_text(query.context, company=company, query=True)
    if embedded is not None:
        floor = retrieval.min_relevance
        if retrieval.fusion_strategy is not FusionStrategy.LINEAR:
            floor = LINEAR_DEFAULTS["min_relevance"]
        dense = _dense(live, embedded, pool, floor)
        legs.append([op for op, _sim in dense])
    fused = rrf_scores(legs, k=RRF_K)
    best = len(legs) / (RRF_K + 1)
    ranked = sorted(fused.items(), key=lambda item: (-item[1], str(item[0])))[:limit]
    scores = {op: round(score / best, 6) for op, score in ranked}
    return fact_views([op for op, _score in ranked], scores)


def org_prompt_context(
    *,
    company: Company,
    context: str,
    limit: int | None = None,
    as_of: datetime | None = None,
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

    Facts are content written by agents and humans of the company; the caller should fence
    them as untrusted text when packing a prompt.
    """
    core = [policy.content for policy in policies(company=company, as_of=as_of)]
    if not (context or "").strip():
        return OrgPromptContext(core_policies=core, facts=[])
    found = query_facts(
        company=company,
        query=OrgMemoryQuery(
            context=context,
            categories=EXTENDED_CATEGORIES,
            limit=_effective_limit(company, limit),
            as_of=as_of,
        ),
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
    return OrgPromptContext(core_policies=core, facts=facts)
