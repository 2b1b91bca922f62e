"""Pruning procedural memories per agent, through the archive (restorable, never lost).

The strategy (:mod:`memory.procedural.pruning`) picks which of an agent's live, private
PROCEDURAL memories go; they are moved to the archive (mode ``pruned``) with their lesson
tiers and skill-pool counters in the archive row's metadata, so ``POST /archive/{id}/restore``
brings the whole lesson back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.consolidation.models import ArchivalMode
from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory, unexpired_q
from memory.core.services.archive import archived_from_memory
from memory.procedural.models import ProceduralLesson
from memory.procedural.pruning import PruneCandidate, PruneDecision, decide_pruning
from memory.procedural.selectors import attach_lessons, lesson_of
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AgentPruneResult:
    agent_id: int
    kept: int
    ttl: int
    pareto: int

    @property
    def pruned(self) -> int:
        return self.ttl + self.pareto


def _lesson_metadata(memory: Memory) -> dict:
    data = {
        "scope": memory.scope,
        "application_count": memory.application_count,
        "last_applied_at": memory.last_applied_at.isoformat() if memory.last_applied_at else None,
    }
    lesson = lesson_of(memory)
    if lesson is not None:
        data["lesson"] = {
            "report_id": str(lesson.report_id) if lesson.report_id else None,
            "origin": lesson.origin,
            "propagated_from": str(lesson.propagated_from_id)
            if lesson.propagated_from_id
            else None,
            "skill_name": lesson.skill_name,
            "discovery": lesson.discovery,
            "condition": lesson.condition,
            "action": lesson.action,
            "rationale": lesson.rationale,
            "execution_steps": lesson.execution_steps,
            "proposer_model": lesson.proposer_model,
            "requested_scope": lesson.requested_scope,
            "org_approval_item": str(lesson.org_approval_item)
            if lesson.org_approval_item
            else None,
            "created_at": lesson.created_at.isoformat(),
        }
    return data


@transaction.atomic
def procedural_prune_agent(
    *, agent: Agent, now: datetime | None = None, dry_run: bool = False
) -> AgentPruneResult:
    """Apply the company's ``memory.procedural.pruning`` to ``agent``'s lessons.

    ``dry_run`` computes and reports without changing anything.
    """
    now = now or timezone.now()
    config = company_config(agent.company).memory.procedural.pruning
    memories = list(
        Memory.objects.select_for_update()
        .filter(
            company_id=agent.company_id,
            agent=agent,
            category="procedural",
            is_shared=False,
            superseded_at__isnull=True,
        )
        .filter(unexpired_q(now))
        .defer("embedding", "search_vector")
    )
    decision: PruneDecision = decide_pruning(
        [
            PruneCandidate(
                id=m.pk,
                created_at=m.created_at,
                confidence=m.confidence,
                application_count=m.application_count,
                last_applied_at=m.last_applied_at,
            )
            for m in memories
        ],
        config=config,
        now=now,
    )
    result = AgentPruneResult(
        agent_id=agent.pk,
        kept=len(memories) - len(decision.pruned),
        ttl=len(decision.ttl),
        pareto=len(decision.pareto),
    )
    if dry_run or not decision.pruned:
        return result
    reasons = {**dict.fromkeys(decision.ttl, "ttl"), **dict.fromkeys(decision.pareto, "pareto")}
    pruned = [m for m in memories if m.pk in reasons]
    attach_lessons(pruned)
    rows = []
    for memory in pruned:
        row = archived_from_memory(memory, mode=ArchivalMode.PRUNED, archived_at=now)
        row.metadata = {
            **row.metadata,
            "pruned_by": reasons[memory.pk],
            "procedural": _lesson_metadata(memory),
        }
        rows.append(row)
    ArchivedMemory.objects.bulk_create(rows)
    Memory.objects.filter(pk__in=list(reasons)).delete()
    audit_record(
        company=agent.company,
        actor_agent=None,
        action_type="procedural_memory.pruned",
        target_type="agent",
        target_id=agent.pk,
        details={"strategy": config.strategy, "ttl": result.ttl, "pareto": result.pareto},
    )
    logger.info("pruned %s procedural memories of agent %s", result.pruned, agent.pk)
    return result


def procedural_prune_company(
    *, company: Company, now: datetime | None = None
) -> list[AgentPruneResult]:
    """Prune every active agent of ``company`` (one transaction per agent)."""
    if company_config(company).memory.procedural.pruning.strategy == "none":
        return []
    return [
        procedural_prune_agent(agent=agent, now=now)
        for agent in Agent.objects.filter(company=company, is_active=True).order_by("pk")
    ]


def lesson_restore(*, memory_id, company: Company, metadata: dict) -> ProceduralLesson | None:
    """Give a memory restored from the archive back its lesson and skill-pool counters
    (an ``on_archive_restored`` handler of the core; a no-op for archive rows without
    procedural metadata)."""
    data = metadata.get("procedural")
    if not data:
        return None
    scope = data.get("scope") or ""
    # Archived before scopes were delivered, a private lesson may carry the scope "org" its
    # proposer asked for; only shared org-pool entries hold it now (memory_org_scope_is_shared).
    if scope == "org" and not Memory.objects.filter(pk=memory_id, is_shared=True).exists():
        scope = "agent"
    Memory.objects.filter(pk=memory_id).update(
        scope=scope,
        application_count=data.get("application_count") or 0,
        last_applied_at=data.get("last_applied_at"),
    )
    lesson = data.get("lesson")
    if not lesson:
        return None
    return ProceduralLesson.objects.create(
        memory_id=memory_id,
        company=company,
        report_id=lesson["report_id"],
        origin=lesson["origin"],
        propagated_from_id=Memory.objects.filter(pk=lesson["propagated_from"])
        .values_list("pk", flat=True)
        .first()
        if lesson["propagated_from"]
        else None,
        skill_name=lesson["skill_name"],
        discovery=lesson["discovery"],
        condition=lesson["condition"],
        action=lesson["action"],
        rationale=lesson["rationale"],
        execution_steps=lesson["execution_steps"],
        proposer_model=lesson["proposer_model"],
        requested_scope=lesson.get("requested_scope", data.get("scope") or ""),
        org_approval_item=lesson.get("org_approval_item"),
        created_at=lesson["created_at"],
    )
