"""Shared knowledge: an agent publishes to its company; only the publisher may retract."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db import transaction

from memory.core.domain import MemoryStoreRequest, StoreResult
from memory.core.errors import MemoryAccessError
from memory.core.models.memory import Memory
from memory.core.selectors.memories import shared_knowledge_require, shared_memory_get
from memory.core.services.edit import guardrail_details
from memory.core.services.events import MEMORY_DELETED, memory_events_record
from memory.core.services.store import memory_store_batch
from persistence.audit_actions import AuditAction
from persistence.models import Agent
from persistence.services.audit import audit_record
from synthorg.embedding import Embedder

NOT_PUBLISHER = "Only the agent that published this entry may retract it."


def shared_publish(
    *,
    agent: Agent,
    request: MemoryStoreRequest,
    principal=None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
) -> StoreResult:
    """Publish ``request`` as company-wide shared knowledge (persistent, whatever the
    agent's own memory level). A near duplicate of the agent's earlier publication returns
    that entry with ``deduplicated=True``. The embedder runs before the store takes its
    locks (see :func:`memory_store_batch`); the publication is audited in the same
    transaction. 403 ``shared_knowledge_disabled`` while the company has shared knowledge
    off."""
    shared_knowledge_require(agent.company)
    with transaction.atomic():
        result = memory_store_batch(
            agent=agent,
            requests=[request],
            principal=principal,
            embedder=embedder,
            now=now,
            shared=True,
            audit=False,  # recorded below as memory.shared_published
        )[0]
        if not result.deduplicated:
            assert result.id is not None  # shared knowledge is stored whatever the agent's level
            audit_record(
                company=agent.company,
                principal=principal,
                actor_agent=None if principal is not None else agent,
                action_type=AuditAction.MEMORY_SHARED_PUBLISHED,
                target_type="memory",
                target_id=result.id,
                details={"namespace": request.namespace, "category": request.category.value},
            )
    return result


@transaction.atomic
def shared_retract(
    *, agent: Agent, memory_id: UUID | str, principal=None, reason: str = "", via: str = ""
) -> None:
    """Remove a shared entry; any agent of the company can see it exists, only its
    publisher may retract it (403 for the others, 404 outside the company; 403
    ``shared_knowledge_disabled`` while the company has shared knowledge off)."""
    memory = shared_memory_get(company=agent.company, memory_id=memory_id)
    if memory.agent_id != agent.pk:
        raise MemoryAccessError(NOT_PUBLISHER, code="not_publisher")
    shared_retract_record(
        memory=memory,
        principal=principal,
        actor_agent=None if principal is not None else agent,
        reason=reason,
        via=via,
    )
    memory_events_record(company_id=memory.company_id, event=MEMORY_DELETED, memories=[memory])
    memory.delete()


def shared_retract_record(
    *,
    memory: Memory,
    principal=None,
    actor_agent: Agent | None = None,
    reason: str = "",
    via: str = "",
    extra: dict | None = None,
) -> None:
    """The audit record of a shared entry leaving the company's shared knowledge
    (``memory.shared_retracted``), written in the caller's transaction: by the publisher's
    retraction, and by maintenance when it archives a shared entry (``via`` says which)."""
    audit_record(
        company=memory.company,
        principal=principal,
        actor_agent=actor_agent,
        action_type=AuditAction.MEMORY_SHARED_RETRACTED,
        target_type="memory",
        target_id=memory.pk,
        details={
            "namespace": memory.namespace,
            "category": memory.category,
            **guardrail_details(reason=reason, via=via),
            **(extra or {}),
        },
    )
