"""The skill pools' counters: agents report that they applied a lesson (a procedural
memory: private, propagated or an org-pool entry) or an approved org skill (any source of
the org skill store, :class:`~memory.procedural.models.OrgSkill`). Each report is one
atomic ``application_count + 1`` and ``last_applied_at``, audited; applying an org-pool
entry as a lesson counts on its org skill too."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError
from memory.core.models.memory import Memory
from memory.core.selectors.memories import agent_visible_q
from memory.procedural.models import OrgSkill
from orgmemory.models import OrgFact
from persistence.audit_actions import AuditAction
from persistence.models import Agent
from persistence.services.audit import audit_record
from synthorg.errors import ConflictError, NotFoundError, UnprocessableError

LESSON_NOT_FOUND = "No procedural memory with this id is visible to the caller."
NOT_PROCEDURAL = "Only procedural memories can be applied."
SUPERSEDED = "This lesson was superseded; apply the one that replaced it."
ORG_SKILL_NOT_FOUND = "No approved org skill with this id exists in your company."
ORG_SKILL_RETRACTED = "This org skill was retracted; apply the skill that replaced it."


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
    OrgSkill.objects.filter(company_id=agent.company_id, memory_id=memory.pk).update(
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


@transaction.atomic
def org_skill_applied(*, agent: Agent, fact_id, now: datetime | None = None) -> OrgSkill:
    """Count one application of an approved org skill (``fact_id``: its id — its procedure
    fact's, or its org-pool memory's — or the id of the memory a restore gave it).

    404 ``org_skill_not_found`` for an id that is no approved skill of the agent's company
    (a person's procedure fact has no counters), 409 ``org_skill_retracted`` for a skill
    whose fact was retracted or whose memory was superseded or archived. The skill's row is
    locked (and its fact's), so a concurrent retraction either happens before (409) or
    after the count.
    """
    now = now or timezone.now()
    try:
        skill = OrgSkill.objects.select_for_update().get(
            Q(pk=fact_id) | Q(memory_id=fact_id), company_id=agent.company_id
        )
    except (OrgSkill.DoesNotExist, ValueError, DjangoValidationError) as exc:
        raise NotFoundError(ORG_SKILL_NOT_FOUND, code="org_skill_not_found") from exc
    if skill.fact_id is not None:
        retired = (
            OrgFact.objects.select_for_update()
            .filter(pk=skill.fact_id)
            .values_list("retracted_at", flat=True)
            .first()
        )
    else:
        retired = (
            Memory.objects.select_for_update()
            .filter(pk=skill.memory_id)
            .values_list("superseded_at", flat=True)
            .first()
            or not Memory.objects.filter(pk=skill.memory_id).exists()
        )
    if retired:
        raise ConflictError(ORG_SKILL_RETRACTED, code="org_skill_retracted")
    OrgSkill.objects.filter(pk=skill.pk).update(
        application_count=F("application_count") + 1, last_applied_at=now
    )
    if skill.memory_id is not None:
        Memory.objects.filter(pk=skill.memory_id).update(
            application_count=F("application_count") + 1, last_applied_at=now
        )
    audit_record(
        company=agent.company,
        actor_agent=agent,
        action_type=AuditAction.ORG_SKILL_APPLIED,
        target_type="org_fact" if skill.fact_id is not None else "memory",
        target_id=str(skill.pk),
    )
    skill.refresh_from_db(fields=["application_count", "last_applied_at"])
    skill.retired_at = None  # live: what the API's listing annotates
    return skill
