"""Reads of an agent's own memories and of its company's shared knowledge.

Every read here hides expired memories (``expires_at`` in the past): they never come back,
even by id. Another agent's private memory, or anything of another company, is simply not
found (404), so its existence does not leak.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db.models import QuerySet
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError
from memory.core.models.memory import Memory, live_q
from memory.core.models.revision import MemoryRevision
from persistence.models import Agent, Company

MEMORY_NOT_FOUND = "No such memory."
SHARED_NOT_FOUND = "No such shared knowledge entry."


def agent_memories(
    *, agent: Agent, now: datetime | None = None, include_superseded: bool = False
) -> QuerySet[Memory]:
    """The agent's private, unexpired memories (superseded ones only when asked)."""
    now = now or timezone.now()
    query = Memory.objects.filter(company_id=agent.company_id, agent=agent, is_shared=False)
    query = query.unexpired(now) if include_superseded else query.live(now)
    return query.order_by("-created_at", "-id")


def _uuid(memory_id: UUID | str, message: str, code: str) -> UUID:
    try:
        return memory_id if isinstance(memory_id, UUID) else UUID(str(memory_id))
    except ValueError:
        raise MemoryNotFoundError(message, code=code) from None


def agent_memory_get(*, agent: Agent, memory_id: UUID | str, now: datetime | None = None) -> Memory:
    """One private memory of ``agent`` (superseded ones included, expired ones not)."""
    memory_id = _uuid(memory_id, MEMORY_NOT_FOUND, MemoryNotFoundError.code)
    memory = (
        agent_memories(agent=agent, now=now, include_superseded=True).filter(pk=memory_id).first()
    )
    if memory is None:
        raise MemoryNotFoundError(MEMORY_NOT_FOUND)
    return memory


def agent_memory_count(
    *, agent: Agent, category: str | None = None, now: datetime | None = None
) -> int:
    """How many live private memories ``agent`` has (optionally of one category)."""
    query = agent_memories(agent=agent, now=now)
    if category:
        query = query.filter(category=category)
    return query.count()


def shared_memories(*, company: Company, now: datetime | None = None) -> QuerySet[Memory]:
    now = now or timezone.now()
    return (
        Memory.objects.filter(company=company, is_shared=True)
        .filter(live_q(now))
        .order_by("-created_at", "-id")
    )


def shared_memory_get(*, company: Company, memory_id: UUID | str) -> Memory:
    memory_id = _uuid(memory_id, SHARED_NOT_FOUND, "shared_not_found")
    memory = Memory.objects.filter(company=company, is_shared=True, pk=memory_id).first()
    if memory is None:
        raise MemoryNotFoundError(SHARED_NOT_FOUND, code="shared_not_found")
    return memory


def memory_revisions(memory: Memory) -> QuerySet[MemoryRevision]:
    """The texts corrections replaced in ``memory``, oldest first, each with its correction's
    audit entry (who, when, why) and that entry's human actor joined: a page in two queries
    (the count and the rows). The caller has already found ``memory`` readable."""
    return (
        MemoryRevision.objects.filter(company_id=memory.company_id, memory=memory)
        .select_related("audit_entry__actor_user")
        .order_by("created_at", "id")
    )
