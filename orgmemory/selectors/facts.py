"""Org facts as they stand now or stood at a point in time, and their history.

Time travel: the operation log is complete, so the state "as of T" is, per fact, its
latest log row with ``timestamp <= T`` — live if that row is a PUBLISH. Without ``as_of``
the materialised :class:`~orgmemory.models.OrgFact` snapshot answers instead. Both paths
produce a set of PUBLISH log rows (:func:`live_operations`), which listing and relevance
ranking (:mod:`orgmemory.selectors.retrieval`) run over.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import F

from orgmemory.domain import OrgFactAuthor
from orgmemory.models import OperationLogEntry, OrgFact
from persistence.models import Company
from synthorg.db.replicas import read_connection
from synthorg.errors import NotFoundError

FACT_NOT_FOUND = "No org fact with this id exists in your company."
FACT_NOT_YET = "The fact did not exist yet at {as_of}."

LOG_TABLE = OperationLogEntry._meta.db_table


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


def _as_of_operations_sql(
    company_id: int, as_of: datetime, categories: frozenset[str] | set[str] | None
) -> tuple[str, list]:
    """SQL selecting ``operation_id, doc_length, timestamp`` of the PUBLISH row each fact
    showed at ``as_of`` (facts whose latest row by then is a RETRACT are left out)."""
    sql = (
        "SELECT s.operation_id, s.doc_length, s.timestamp FROM ("
        "SELECT DISTINCT ON (fact_id) operation_id, operation_type, category, doc_length, "
        f"timestamp FROM {LOG_TABLE} "
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


def fact_views(operation_ids: list, scores: dict | None = None) -> list[FactView]:
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
    ids = [row[0] for row in live_operations(company.pk, as_of, categories)]
    views = fact_views(ids)
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


def live_operations(
    company_id: int, as_of: datetime | None, categories
) -> list[tuple[uuid.UUID, int, datetime]]:
    """``(operation_id, doc_length, timestamp)`` of each live fact's current PUBLISH row.

    Plain single-table reads joined through arrays: a young table without planner
    statistics otherwise gets nested-loop plans that go quadratic.
    """
    if as_of is not None:
        sql, params = _as_of_operations_sql(company_id, as_of, categories)
        with read_connection().cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    snapshots = OrgFact.objects.filter(company_id=company_id, retracted_at__isnull=True)
    if categories is not None:
        snapshots = snapshots.filter(category__in=[str(c) for c in categories])
    keys = list(snapshots.values_list("fact_id", "version"))
    if not keys:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(
            "SELECT l.operation_id, l.doc_length, l.timestamp "
            "FROM unnest(%s::uuid[], %s::integer[]) AS c(fact_id, version) "
            f"JOIN {LOG_TABLE} l ON l.fact_id = c.fact_id AND l.version = c.version",
            [[k[0] for k in keys], [k[1] for k in keys]],
        )
        return cursor.fetchall()


# --- fine-tune training pairs (read by memory.finetune.selectors) -------------------------


def _current_publish_rows(company: Company, embedder_id: str):
    """Each live fact's current PUBLISH row that has a vector of ``embedder_id``."""
    return OperationLogEntry.objects.filter(
        company=company,
        operation_type=OperationLogEntry.Operation.PUBLISH,
        fact__retracted_at__isnull=True,
        version=F("fact__version"),
        embedding__embedder_id=embedder_id,
    )


def fact_version_pairs(company: Company, embedder_id: str) -> Iterator[tuple[str, uuid.UUID]]:
    """``(earlier version's text, current version's operation id)`` for every live fact: an
    earlier wording of a fact is a query its current wording answers. Each distinct earlier
    wording once; one equal to the current text (a re-publish that changed only tags) is no
    pair; only facts whose current version has a vector of ``embedder_id`` count."""
    current = dict(
        _current_publish_rows(company, embedder_id).values_list("fact_id", "operation_id")
    )
    if not current:
        return
    texts = dict(
        OperationLogEntry.objects.filter(operation_id__in=current.values()).values_list(
            "operation_id", "content"
        )
    )
    earlier = (
        OperationLogEntry.objects.filter(
            company=company,
            operation_type=OperationLogEntry.Operation.PUBLISH,
            fact_id__in=list(current),
            version__lt=F("fact__version"),
        )
        .order_by("fact_id", "version")
        .values_list("fact_id", "content")
    )
    seen: set[tuple[uuid.UUID, str]] = set()
    for fact_id, content in earlier.iterator():
        operation_id = current[fact_id]
        wording = content.strip()
        if wording and wording != texts[operation_id].strip() and (fact_id, wording) not in seen:
            seen.add((fact_id, wording))
            yield content, operation_id


def fact_version_vectors(
    company: Company, embedder_id: str
) -> Iterator[tuple[uuid.UUID, list[float]]]:
    """``(operation id, vector)`` of each live fact's current version with a vector of
    ``embedder_id``, in a stable order: the document pool fact-version pairs rank in."""
    rows = (
        _current_publish_rows(company, embedder_id)
        .order_by("operation_id")
        .values_list("operation_id", "embedding__embedding")
    )
    yield from rows.iterator(chunk_size=2000)
