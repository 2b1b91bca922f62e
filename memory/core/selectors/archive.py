"""Reads of an agent's archive (the cold store of consolidated memories)."""

from __future__ import annotations

from uuid import UUID

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.core.exceptions import ValidationError
from django.db.models import F, Q, QuerySet
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from memory.core.errors import MemoryNotFoundError
from memory.core.models.maintenance import (
    ARCHIVE_SEARCH_CONFIG,
    ArchivedMemory,
    archive_search_vector,
)
from persistence.models import Agent
from synthorg.enums import MemoryCategory

ARCHIVE_NOT_FOUND = "No such archived memory."


class ArchiveQuery(BaseModel):
    """Filters for archive search; field names follow the retrieval ``MemoryQuery``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str | None = Field(default=None, max_length=1000)
    namespaces: tuple[str, ...] = ()
    categories: tuple[MemoryCategory, ...] = ()
    tags: tuple[str, ...] = ()  # all must be present
    since: AwareDatetime | None = None  # on the original created_at
    until: AwareDatetime | None = None
    include_restored: bool = False
    limit: int = Field(default=10, ge=1, le=1000)


def agent_archive(*, agent: Agent) -> QuerySet[ArchivedMemory]:
    return ArchivedMemory.objects.filter(company_id=agent.company_id, agent=agent)


def archive_search(*, agent: Agent, query: ArchiveQuery) -> list[ArchivedMemory]:
    """The agent's archived memories matching ``query``: best text match first, else newest
    archived first. Restored entries are left out unless ``include_restored``."""
    rows = agent_archive(agent=agent)
    if not query.include_restored:
        rows = rows.filter(restored_at__isnull=True)
    if query.namespaces:
        rows = rows.filter(namespace__in=query.namespaces)
    if query.categories:
        rows = rows.filter(category__in=[c.value for c in query.categories])
    if query.tags:
        rows = rows.filter(tags__contains=list(query.tags))
    if query.since is not None:
        rows = rows.filter(created_at__gte=query.since)
    if query.until is not None:
        rows = rows.filter(created_at__lte=query.until)
    text = (query.text or "").strip()
    if text:
        search = SearchQuery(text, config=ARCHIVE_SEARCH_CONFIG, search_type="websearch")
        rows = (
            rows.annotate(document=archive_search_vector())
            .filter(document=search)
            .annotate(rank=SearchRank(F("document"), search))
            .order_by("-rank", "-archived_at", "id")
        )
    else:
        rows = rows.order_by("-archived_at", "id")
    return list(rows[: query.limit])


def archive_get(*, agent: Agent, archive_id: UUID | str) -> ArchivedMemory:
    """One of the agent's archived memories, by its archive id or by the original memory's
    id (what the agent held before maintenance moved it); another agent's or company's is
    not found. Both are UUIDs from one generator, so the two never name different rows."""
    try:
        return agent_archive(agent=agent).get(Q(pk=archive_id) | Q(original_id=archive_id))
    except (ArchivedMemory.DoesNotExist, ValidationError, ValueError):
        raise MemoryNotFoundError(ARCHIVE_NOT_FOUND, code="archive_not_found") from None
