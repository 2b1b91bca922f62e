"""The skill pool: agents report that they applied a lesson."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError
from memory.core.models.memory import Memory
from memory.core.selectors.memories import agent_visible_q
from persistence.audit_actions import AuditAction
from persistence.models import Agent
from persistence.services.audit import audit_record
from synthorg.errors import ConflictError, UnprocessableError

LESSON_NOT_FOUND = "No procedural memory with this id is visible to the caller."
NOT_PROCEDURAL = "Only procedural memories can be applied."
SUPERSEDED = "This lesson was superseded; apply the one that replaced it."


def visible_memory(*, agent: Agent, memory_id) -> Memory:
    """A live memory the agent may use: its own private one or the company's shared one
    (while the company has shared knowledge on)."""
    now = timezone.now()
    memory = (
        Memory.objects.filter(company_id=agent.company_id, pk=memory_id)
        .filter(agent_visible_q(agent))
        .first()
    )
    if memory is None or (memory.expires_at is not None and memory.expires_at <= now):
        raise MemoryNotFoundError(LESSON_NOT_FOUND)
    return memory


@transaction.atomic
def procedural_memory_applied(*, agent: Agent, memory_id, now: datetime | None = None) -> Memory:
    """Count one application of a lesson: ``application_count + 1``, ``last_applied_at``.

    404 if the caller cannot see the memory, 422 ``not_procedural`` for another category,
    409 ``memory_superseded`` for a superseded (tombstoned) lesson.
    """
    now = now or timezone.now()
    memory = visible_memory(agent=agent, memory_id=memory_id)
    if memory.category != "procedural":
        raise UnprocessableError(NOT_PROCEDURAL, code="not_procedural")
    if memory.superseded_at is not None:
        raise ConflictError(SUPERSEDED, code="memory_superseded")
    Memory.objects.filter(pk=memory.pk).update(
        application_count=F("application_count") + 1, last_applied_at=now
    )
    audit_record(
        company=agent.company,
        actor_agent=agent,
        action_type=AuditAction.PROCEDURAL_MEMORY_APPLIED,
        target_type="memory",
        target_id=memory.pk,
    )
    memory.refresh_from_db(fields=["application_count", "last_applied_at"])
    return memory
