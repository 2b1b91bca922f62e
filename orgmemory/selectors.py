"""Reads of org memory: policies, relevance queries, time travel, history, requests.

Time travel: the operation log is complete, so the state "as of T" is, per fact, its
latest log row with ``timestamp <= T`` — live if that row is a PUBLISH. Without ``as_of``
the materialised :class:`~orgmemory.models.OrgFact` snapshot answers instead. Both paths
produce a set of PUBLISH log rows, and relevance ranking runs over that set:

* sparse leg: BM25 (k1 1.2, b 0.75) in Postgres over each row's english ``tsvector``,
  with document frequencies and average length taken from the same set (so a past state
  is ranked as it would have been then);
* dense leg (when an embedder is available): cosine similarity of stored row vectors,
  exact (org memory is small; no HNSW needed), kept above a cosine floor: the company's
  ``memory.retrieval.min_relevance`` under ``linear`` fusion (where it is a cosine
  threshold), the linear default 0.3 under ``rrf`` (where min_relevance thresholds the
  fused score instead);
* fusion: reciprocal rank fusion (k = 60), normalised to 0..1 by the best achievable
  score for the legs used.

Config core policies are not versioned (the company config has no history), so ``as_of``
applies to core-policy *facts* only; config policies are always the current ones.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection
from django.db.models import QuerySet

from orgmemory.domain import OrgFactAuthor, OrgMemoryQuery
from orgmemory.embedding import embed_text
from orgmemory.models import OperationLogEntry, OrgFact, WriteAccessRequest
from persistence.models import Company
from persistence.principal import Principal
from persistence.selectors.config import company_config
from synthorg.company_config import LINEAR_DEFAULTS, FusionStrategy
from synthorg.enums import OrgFactCategory
from synthorg.errors import NotFoundError
from synthorg.retrieval import bm25
from synthorg.retrieval.fusion import DEFAULT_RRF_K, rrf_scores
from synthorg.retrieval.vectors import vector_literal

# One copy of the ranking math for memories and facts (synthorg.retrieval).
BM25_K1 = bm25.K1
BM25_B = bm25.B
RRF_K = DEFAULT_RRF_K

EXTENDED_CATEGORIES: frozenset[OrgFactCategory] = frozenset(OrgFactCategory) - {
    OrgFactCategory.CORE_POLICY
}

FACT_NOT_FOUND = "No org fact with this id exists in your company."
FACT_NOT_YET = "The fact did not exist yet at {as_of}."
REQUEST_NOT_FOUND = "No write-access request with this id exists in your company."

_LOG = OperationLogEntry._meta.db_table


@dataclass(frozen=True)
class FactView:
    """One fact as it stood at a point in time (now, or ``as_of``)."""

    fact_id: uuid.UUID
    version: int
    category: str
    content: str
    tags: list[str]
    author: OrgFactAuthor
    author_user: str | None
    approved_by: str | None
    created_at: datetime
    updated_at: datetime
    retracted_at: datetime | None = None
    score: float | None = None


@dataclass(frozen=True)
class PolicyView:
    """A core policy: from the company config (``source="config"``) or a core_policy fact."""

    id: str
    source: str
    content: str
    fact_id: uuid.UUID | None = None
    version: int | None = None
    created_at: datetime | None = None


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


# --- policies ---------------------------------------------------------------------------


def policies(*, company: Company, as_of: datetime | None = None) -> list[PolicyView]:
    """Core policies in their intrinsic order: config policies first (in config order),
    then core_policy facts live at ``as_of`` (oldest first). Never filtered by relevance."""
    config_items = [
        PolicyView(id=f"config-{index}", source="config", content=text)
        for index, text in enumerate(company_config(company).org_memory.core_policies)
    ]
    fact_items = [
        PolicyView(
            id=str(view.fact_id),
            source="fact",
            content=view.content,
            fact_id=view.fact_id,
            version=view.version,
            created_at=view.created_at,
        )
        for view in live_facts(
            company=company, categories={OrgFactCategory.CORE_POLICY}, as_of=as_of
        )
    ]
    return config_items + fact_items


# --- fact state -------------------------------------------------------------------------


def _as_of_operations_sql(
    company_id: int, as_of: datetime, categories: frozenset[str] | set[str] | None
) -> tuple[str, list]:
    """SQL selecting ``operation_id, doc_length, timestamp`` of the PUBLISH row each fact
    showed at ``as_of`` (facts whose latest row by then is a RETRACT are left out)."""
    sql = (
        "SELECT s.operation_id, s.doc_length, s.timestamp FROM ("
        "SELECT DISTINCT ON (fact_id) operation_id, operation_type, category, doc_length, "
        f"timestamp FROM {_LOG} "
        "WHERE company_id = %s AND timestamp <= %s ORDER BY fact_id, version DESC"
        ") s WHERE s.operation_type = 'PUBLISH'"
    )
    params: list = [company_id, as_of]
    if categories is not None:
        sql += " AND s.category = ANY(%s)"
        params.append(sorted(str(c) for c in categories))
    return sql, params


def _author(entry: OperationLogEntry) -> OrgFactAuthor:
    if entry.author_is_human:
        return OrgFactAuthor(is_human=True)
    return OrgFactAuthor(
        agent_id=str(entry.author_agent_id),
        seniority=entry.author_seniority,
        autonomy_level=entry.author_autonomy_level,
        is_human=False,
    )


def _username(user) -> str | None:
    return None if user is None else user.get_username()


def _views(operation_ids: list, scores: dict | None = None) -> list[FactView]:
    """Views of the given PUBLISH rows, in the order of ``operation_ids``."""
    if not operation_ids:
        return []
    entries = {
        e.operation_id: e
        for e in OperationLogEntry.objects.filter(operation_id__in=operation_ids).select_related(
            "author_user", "approved_by"
        )
    }
    first_published = dict(
        OperationLogEntry.objects.filter(
            fact_id__in=[e.fact_id for e in entries.values()], version=1
        ).values_list("fact_id", "timestamp")
    )
    views = []
    for operation_id in operation_ids:
        entry = entries[operation_id]
        views.append(
            FactView(
                fact_id=entry.fact_id,
                version=entry.version,
                category=entry.category,
                content=entry.content,
                tags=list(entry.tags),
                author=_author(entry),
                author_user=_username(entry.author_user),
                approved_by=_username(entry.approved_by),
                created_at=first_published[entry.fact_id],
                updated_at=entry.timestamp,
                score=None if scores is None else scores.get(operation_id),
            )
        )
    return views


def live_facts(
    *,
    company: Company,
    categories: set[str] | frozenset[str] | None = None,
    as_of: datetime | None = None,
) -> list[FactView]:
    """Every fact live at ``as_of`` (default: now), oldest first."""
    ids = [row[0] for row in _live_operations(company.pk, as_of, categories)]
    views = _views(ids)
    return sorted(views, key=lambda v: (v.created_at, str(v.fact_id)))


def fact_history(*, company: Company, fact_id) -> list[OperationLogEntry]:
    """Every log row of the fact, version 1 first. 404 when not in ``company``."""
    try:
        rows = list(
            OperationLogEntry.objects.filter(company=company, fact_id=fact_id)
            .select_related("author_user", "approved_by")
            .order_by("version")
        )
    except (DjangoValidationError, ValueError) as exc:
        raise NotFoundError(FACT_NOT_FOUND, code="fact_not_found") from exc
    if not rows:
        raise NotFoundError(FACT_NOT_FOUND, code="fact_not_found")
    return rows


def fact_state(*, company: Company, fact_id, as_of: datetime | None = None) -> FactView:
    """The fact as it stood at ``as_of`` (default: now), retracted or not.

    404 ``fact_not_found`` if it is not the company's; 404 ``fact_not_found_at`` if its
    first version is later than ``as_of``.
    """
    rows = fact_history(company=company, fact_id=fact_id)
    if as_of is not None:
        rows = [row for row in rows if row.timestamp <= as_of]
        if not rows:
            raise NotFoundError(
                FACT_NOT_YET.format(as_of=as_of.isoformat()), code="fact_not_found_at"
            )
    latest = rows[-1]
    published = [row for row in rows if row.operation_type == OperationLogEntry.Operation.PUBLISH]
    shown = published[-1]
    retracted = latest.operation_type == OperationLogEntry.Operation.RETRACT
    return FactView(
        fact_id=latest.fact_id,
        version=latest.version,
        category=latest.category,
        content=shown.content,
        tags=list(shown.tags),
        author=_author(shown),
        author_user=_username(shown.author_user),
        approved_by=_username(shown.approved_by),
        created_at=rows[0].timestamp,
        updated_at=latest.timestamp,
        retracted_at=latest.timestamp if retracted else None,
    )


# --- relevance --------------------------------------------------------------------------


def _live_operations(
    company_id: int, as_of: datetime | None, categories
) -> list[tuple[uuid.UUID, int, datetime]]:
    """``(operation_id, doc_length, timestamp)`` of each live fact's current PUBLISH row.

    Plain single-table reads joined through arrays: a young table without planner
    statistics otherwise gets nested-loop plans that go quadratic.
    """
    if as_of is not None:
        sql, params = _as_of_operations_sql(company_id, as_of, categories)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    snapshots = OrgFact.objects.filter(company_id=company_id, retracted_at__isnull=True)
    if categories is not None:
        snapshots = snapshots.filter(category__in=[str(c) for c in categories])
    keys = list(snapshots.values_list("fact_id", "version"))
    if not keys:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.operation_id, l.doc_length, l.timestamp "
            "FROM unnest(%s::uuid[], %s::integer[]) AS c(fact_id, version) "
            f"JOIN {_LOG} l ON l.fact_id = c.fact_id AND l.version = c.version",
            [[k[0] for k in keys], [k[1] for k in keys]],
        )
        return cursor.fetchall()


def _query_terms(context: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(array_agg(t.lexeme), '{}') "
            "FROM unnest(to_tsvector('english'::regconfig, %s)) AS t",
            [context],
        )
        return list(cursor.fetchone()[0])


def _bm25(live: list[tuple], context: str, pool: int) -> list[tuple]:
    """``(operation_id, score)`` of the ``pool`` best BM25 matches among ``live`` rows.

    Document frequencies and the average length are those of ``live`` itself.
    """
    terms = _query_terms(context)
    if not terms or not live:
        return []
    n_docs = float(len(live))
    avgdl = max(sum(row[1] for row in live) / n_docs, 1.0)
    sql = f"""
    WITH tf AS MATERIALIZED (
        SELECT l.operation_id AS id, t.lexeme AS term,
               coalesce(array_length(t.positions, 1), 1)::float AS f,
               l.doc_length::float AS dl
          FROM unnest(%(ids)s::uuid[]) AS c(id)
          JOIN {_LOG} l ON l.operation_id = c.id
          CROSS JOIN LATERAL unnest(l.search_vector) AS t
         WHERE t.lexeme = ANY(%(terms)s::text[])
    ),
    df AS MATERIALIZED (SELECT term, count(*)::float AS n FROM tf GROUP BY term)
    SELECT tf.id,
           sum(ln(1 + (%(n)s - df.n + 0.5) / (df.n + 0.5))
               * tf.f * ({BM25_K1} + 1)
               / (tf.f + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * tf.dl / %(avgdl)s))) AS score
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
    live = _live_operations(company.pk, query.as_of, categories)
    if not live:
        return []
    if query.context is None:
        recent = sorted(live, key=lambda row: (row[2], str(row[0])), reverse=True)[:limit]
        return _views([row[0] for row in recent])

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
    return _views([op for op, _score in ranked], scores)


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


# --- write-access requests --------------------------------------------------------------


def write_requests_for(*, principal: Principal, status: str | None = None) -> QuerySet:
    """Requests the principal may see: an agent its own, a human all of the company's."""
    queryset = WriteAccessRequest.objects.filter(company=principal.company).select_related(
        "requester", "decided_by"
    )
    if principal.is_agent:
        queryset = queryset.filter(requester=principal.agent)
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-id")


def write_request_for(*, principal: Principal, request_id) -> WriteAccessRequest:
    try:
        return write_requests_for(principal=principal).get(pk=request_id)
    except (WriteAccessRequest.DoesNotExist, DjangoValidationError, ValueError) as exc:
        raise NotFoundError(REQUEST_NOT_FOUND, code="write_request_not_found") from exc
