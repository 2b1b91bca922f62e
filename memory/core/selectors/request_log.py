"""Reads of the request log: one company's entries, newest first, filtered."""

from __future__ import annotations

from dataclasses import dataclass

from memory.core.models import RequestLogEntry
from persistence.models import Company


@dataclass(frozen=True)
class RequestLogFilters:
    agent_id: int | None = None
    kind: str | None = None
    degraded_only: bool = False
    #: a case-insensitive substring of the query text
    query: str = ""


def request_log_page(
    *, company: Company, filters: RequestLogFilters, page: int = 1, size: int = 50
) -> tuple[list[RequestLogEntry], bool]:
    """One page of ``company``'s entries (newest first) and whether another page follows.
    No count: the log holds at most ``max_entries`` rows, and a page reads ``size + 1``."""
    rows = RequestLogEntry.objects.filter(company=company).select_related("agent")
    if filters.agent_id is not None:
        rows = rows.filter(agent_id=filters.agent_id)
    if filters.kind:
        rows = rows.filter(kind=filters.kind)
    if filters.degraded_only:
        rows = rows.exclude(degraded=[])
    if filters.query:
        rows = rows.filter(query__icontains=filters.query)
    start = (page - 1) * size
    entries = list(rows.order_by("-created_at", "-id")[start : start + size + 1])
    return entries[:size], len(entries) > size
