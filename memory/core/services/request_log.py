"""Writes of the request log: one INSERT per agent search/context call, and the retention
that keeps it bounded (``memory.request_log``: ``enabled``, ``max_entries``,
``max_age_days``).

Recording is one ``INSERT`` (no read, no trim on the write path) committed with
``synchronous_commit = off`` when it is its own transaction: the search does not wait for the
WAL flush (measured: 4 ms of a 7 ms search on this machine's disk; ``bench/request_log.py``).
A crash may lose the last fraction of a second of log rows, never make them inconsistent, and
nothing else's durability changes (``SET LOCAL`` ends with the log's transaction; inside a
caller's transaction the row simply commits with it). The ``memory-request-log-retention``
schedule trims every company to its cap and age every 15 minutes, so a company holds at most
``max_entries`` plus what its agents wrote in the last 15 minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory.core.models import RequestLogEntry
from persistence.models import Agent, Company
from synthorg.company_config.memory import RequestLogConfig

QUERY_MAX = 500


def request_log_record(
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
) -> RequestLogEntry | None:
    """Record one call (``None`` when the company turned the log off)."""
    if not config.enabled:
        return None
    if connection.in_atomic_block:  # the caller's transaction decides how it commits
        return _insert(agent, kind, via, query, result_count, latency_ms, degraded, now)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        return _insert(agent, kind, via, query, result_count, latency_ms, degraded, now)


def _insert(agent, kind, via, query, result_count, latency_ms, degraded, now):
    return RequestLogEntry.objects.create(
        company_id=agent.company_id,
        agent=agent,
        kind=kind,
        via=via[:16],
        query=query[:QUERY_MAX],
        result_count=result_count,
        latency_ms=max(0.0, latency_ms),
        degraded=list(degraded),
        created_at=now or timezone.now(),
    )


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
