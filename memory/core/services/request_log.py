"""Writes of the request log: one row per agent search/context call, and the retention that
keeps it bounded (``memory.request_log``: ``enabled``, ``max_entries``, ``max_age_days``).

:func:`request_log_entry` builds the row when the call answers (its time is the call's);
:func:`request_log_write` inserts rows — one ``INSERT`` for all of them, no read, no trim on
the write path — committed with ``synchronous_commit = off`` when it is its own transaction
(a crash may lose the last fraction of a second of log rows, never make them inconsistent;
nothing else's durability changes: ``SET LOCAL`` ends with the log's transaction). Inside an
HTTP request ``MemoryService`` hands the rows to :func:`synthorg.after_response.after_response`,
so they are written after the response is sent, in one statement per request
(``bench/request_log.py`` measures what the client waits for). The
``memory-request-log-retention`` schedule trims every company to its cap and age every 15
minutes, so a company holds at most ``max_entries`` plus what its agents wrote in the last 15
minutes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory.core.models import RequestLogEntry
from persistence.content_registry import ContentKind, deleted_counts
from persistence.models import Agent, Company
from synthorg.company_config.memory import RequestLogConfig

QUERY_MAX = 500


def request_log_entry(
    *,
    agent: Agent,
    config: RequestLogConfig,
    kind: str,
    via: str,
    query: str,
    result_count: int,
    latency_ms: float,
    degraded: Sequence[str] = (),
    now: datetime | None = None,
    subject: str | None = None,
) -> RequestLogEntry | None:
    """The unsaved row of one call (``None`` when the company turned the log off)."""
    if not config.enabled:
        return None
    return RequestLogEntry(
        company_id=agent.company_id,
        agent=agent,
        kind=kind,
        via=via[:16],
        query=query[:QUERY_MAX],
        result_count=result_count,
        latency_ms=max(0.0, latency_ms),
        degraded=list(degraded),
        subject=subject or "",
        created_at=now or timezone.now(),
    )


def request_log_write(entries: Sequence[RequestLogEntry]) -> None:
    """Insert ``entries`` in one statement (their ``pk`` is set).

    Inside the caller's transaction it is one ``INSERT`` that commits as that transaction
    does. On its own it is **one round trip**: ``synchronous_commit`` is set transaction-local
    in the same query string as the ``INSERT``, which runs as one implicit transaction (a
    simple query of several statements), so the setting ends with it (it was four round
    trips; measured:
    docs/benchmarks/http.md#fewer-round-trips-per-request-issue-24-item-4-within-the-noise).
    """
    if not entries:
        return
    if connection.in_atomic_block:  # the caller's transaction decides how it commits
        RequestLogEntry.objects.bulk_create(entries)
        return
    fields = [f for f in RequestLogEntry._meta.concrete_fields if not f.primary_key]
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    params = [
        field.get_db_prep_save(field.pre_save(entry, True), connection)
        for entry in entries
        for field in fields
    ]
    columns = ", ".join(connection.ops.quote_name(f.column or f.attname) for f in fields)
    table = connection.ops.quote_name(RequestLogEntry._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('synchronous_commit', 'off', true);\n"
            f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * len(entries))} "
            "RETURNING id",
            params,
        )
        cursor.nextset()
        for entry, (pk,) in zip(entries, cursor.fetchall(), strict=True):
            entry.pk = pk
            entry._state.adding = False


def request_log_record(**fields) -> RequestLogEntry | None:
    """Build (:func:`request_log_entry`, same arguments) and insert one row now; ``None``
    when the company turned the log off."""
    entry = request_log_entry(**fields)
    if entry is not None:
        request_log_write([entry])
    return entry


@dataclass(frozen=True)
class TrimResult:
    expired: int  # older than max_age_days
    over_cap: int  # beyond the max_entries newest


_OVER_CAP_SQL = """
DELETE FROM memory_requestlogentry WHERE id IN (
    SELECT id FROM memory_requestlogentry WHERE company_id = %s
    ORDER BY created_at DESC, id DESC OFFSET %s
)
"""


@transaction.atomic
def request_log_trim(*, company: Company, config: RequestLogConfig, now: datetime | None = None):
    """Delete the company's entries older than ``max_age_days``, then all but the
    ``max_entries`` newest. A company that turned the log off keeps what it has until it
    ages out."""
    now = now or timezone.now()
    expired, _ = RequestLogEntry.objects.filter(
        company=company, created_at__lt=now - timedelta(days=config.max_age_days)
    ).delete()
    with connection.cursor() as cursor:
        cursor.execute(_OVER_CAP_SQL, [company.pk, config.max_entries])
        over_cap = cursor.rowcount
    return TrimResult(expired=expired, over_cap=over_cap)


def export_request_log(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    """The company's (or one agent's; or about one subject) logged calls, oldest first, for
    portability."""
    rows = RequestLogEntry.objects.filter(company=company).select_related("agent")
    if agent is not None:
        rows = rows.filter(agent=agent)
    if subject is not None:
        rows = rows.filter(subject=subject)
    for row in rows.order_by("created_at", "id").iterator(500):
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "kind": row.kind,
            "via": row.via,
            "query": row.query,
            "result_count": row.result_count,
            "latency_ms": row.latency_ms,
            "degraded": row.degraded,
            "subject": row.subject or None,
            "created_at": row.created_at.isoformat(),
        }


def erase_request_log(agent: Agent) -> int:
    """Delete every logged call of ``agent``: the rows hold its query text verbatim."""
    return RequestLogEntry.objects.filter(agent=agent).delete()[0]


def erase_subject_request_log(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    """Every logged call (of ``agent``, when given) that filtered by ``subject``: the row
    names them, and its query text was asked about them."""
    rows = RequestLogEntry.objects.filter(company=company, subject=subject)
    if agent is not None:
        rows = rows.filter(agent=agent)
    return deleted_counts(rows.delete())


#: The request log in the content registry: an agent's erasure deletes its rows (they hold
#: what it searched for, word for word) and an export carries them. Not importable: they
#: record calls made to another server.
REQUEST_LOG = ContentKind(
    name="request_log_entry",
    label="request log entries",
    export=export_request_log,
    erase=erase_request_log,
    erase_subject=erase_subject_request_log,
    subjected=True,
    order=60,
    table=RequestLogEntry._meta.db_table,
)
