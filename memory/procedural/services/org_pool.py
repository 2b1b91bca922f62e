"""Applying an approved org-pool proposal: the one place a lesson enters the org skill pool.

Runs inside the approval service's deciding transaction (registered as the applier of
``procedural_lesson:org_pool`` and ``procedural_lesson:org_pool_conflict``). The entry is a
shared PROCEDURAL memory of scope ``org`` published under the proposing agent, with the
tiers as the approver left them (edit-then-approve), its own lesson row (``propagated_from``:
the author's lesson, ``org_approval_item``: the item) and the skill pool's counters
(``application_count``, ``last_applied_at``; :mod:`memory.procedural.services.skill_pool`).
It supersedes — kept, restorable, out of retrieval — the entry a FULL verdict named (or the
contradicted entry of an approved conflict), the author's private lesson and that lesson's
propagated copies: from now on the pool entry is the one every agent finds and counts.
Any error rolls the approval back with it.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.selectors.memories import shared_knowledge_require
from memory.core.services.store import memory_store_batch
from memory.procedural.domain import ProceduralMemoryProposal
from memory.procedural.evolver.skill_text import SkillFields
from memory.procedural.models import OrgSkill, ProceduralLesson
from memory.procedural.services.lessons import lesson_row_create, lesson_tags
from memory.procedural.services.org_pool_proposals import ACTION_ORG_POOL_CONFLICT
from memory.procedural.skills import org_skill_retire, org_skill_store
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_consume
from persistence.audit_actions import AuditAction
from persistence.principal import Principal
from persistence.services.audit import audit_record
from synthorg.enums import MemoryCategory
from synthorg.errors import ConflictError

logger = logging.getLogger("memory.procedural")

ORG_POOL_TAG = "org-pool"
SOURCE_GONE = (
    "The lesson proposed for the org skill pool no longer exists (erased or purged); "
    "reject this item instead."
)
POOL_DUPLICATE = (
    "The org skill pool already holds this lesson (entry {memory_id}); reject this item instead."
)


def org_pool_apply(item: ApprovalItem, actor: Principal) -> None:
    """Approved proposal: add the entry, supersede what it replaces, consume the item.
    409 ``org_pool_source_gone`` / ``org_pool_duplicate`` roll the approval back, and so
    does 403 ``shared_knowledge_disabled``: the pool is shared knowledge, which the company
    turned off after the item was filed."""
    shared_knowledge_require(item.company)
    now = timezone.now()
    source = (
        Memory.objects.select_for_update(of=("self",))
        .select_related("agent")
        .filter(company=item.company, pk=item.metadata["lesson_memory_id"])
        .first()
    )
    source_lesson = ProceduralLesson.objects.filter(memory_id=getattr(source, "pk", None)).first()
    if source is None or source_lesson is None:
        raise ConflictError(SOURCE_GONE, code="org_pool_source_gone")
    proposal = ProceduralMemoryProposal.model_validate(item.metadata["proposal"])
    request = MemoryStoreRequest(
        content=proposal.discovery,
        category=MemoryCategory.PROCEDURAL,
        source=source.source,
        confidence=proposal.confidence,
        tags=lesson_tags(proposal, extra=[ORG_POOL_TAG]),
    )
    [result] = memory_store_batch(
        agent=source.agent,
        requests=[request],
        principal=actor,
        now=now,
        shared=True,
        audit=False,  # recorded below as procedural_lesson.org_pool_added
    )
    if result.deduplicated:
        raise ConflictError(POOL_DUPLICATE.format(memory_id=result.id), code="org_pool_duplicate")
    pool_lesson = lesson_row_create(
        memory_id=result.id,
        company=item.company,
        report=source_lesson.report,
        origin=source_lesson.origin,
        proposal=proposal,
        model=source_lesson.proposer_model,
        now=now,
        method=source_lesson.method,
        scope="org",
        requested_scope="org",
        propagated_from_id=source.pk,
        org_approval_item=item.pk,
    )
    agents = item.evidence.get("agents") or []
    org_skill_store(
        company=item.company,
        source=OrgSkill.Source.LESSON_POOL,
        fields=SkillFields(
            name=pool_lesson.skill_name,
            discovery=proposal.discovery,
            condition=proposal.condition,
            action=proposal.action,
            rationale=proposal.rationale,
            steps=list(proposal.execution_steps),
            confidence=proposal.confidence,
            report_count=len(item.evidence.get("report_ids") or []),
            agent_count=len(agents) if isinstance(agents, list) else 0,
        ).model_dump(),
        advice=proposal.advice or source_lesson.advice,
        memory_id=result.id,
        approval_item=item.pk,
        created_at=now,
    )
    replaced = _replaced_entry(item)
    superseded = [source.pk]
    superseded += ProceduralLesson.objects.filter(
        propagated_from_id=source.pk, memory__is_shared=False
    ).values_list("memory_id", flat=True)
    count = Memory.objects.filter(
        company=item.company, pk__in=superseded, superseded_at__isnull=True
    ).update(superseded_at=now, superseded_by_id=result.id, updated_at=now)
    if replaced and org_skill_retire(
        company=item.company,
        ref=replaced,
        actor=actor,
        approval_item_id=item.pk,
        replaced_by=str(result.id),
        replaced_by_memory=result.id,
        now=now,
    ):
        count += 1
    audit_record(
        company=item.company,
        action_type=AuditAction.PROCEDURAL_LESSON_ORG_POOL_ADDED,
        principal=actor,
        target_type="memory",
        target_id=result.id,
        details={
            "approval_item": str(item.pk),
            "lesson": str(source.pk),
            "replaces": replaced,
            "superseded": count,
        },
    )
    logger.info(
        "ORG_POOL_ENTRY_ADDED company=%s entry=%s lesson=%s item=%s replaces=%s",
        item.company.slug,
        result.id,
        source.pk,
        item.pk,
        replaced,
    )
    approval_consume(company=item.company, item_id=item.pk)


def _replaced_entry(item: ApprovalItem) -> str | None:
    """The org skill the approval replaces: a conflict's contradicted entry, or the one a
    FULL verdict named (a pool memory, or a ``procedure`` fact)."""
    if item.action_type == ACTION_ORG_POOL_CONFLICT:
        entry = item.evidence["existing"]
    elif item.evidence.get("verdict") == "FULL":
        entry = item.evidence["superseded"]
    else:
        return None
    return entry.get("memory_id") or entry["fact_id"]
