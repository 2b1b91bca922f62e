"""Pruning procedural memories per agent, through the archive (restorable, never lost).

The strategy (:mod:`memory.procedural.pruning`) picks which of an agent's live, private
PROCEDURAL memories go; they are moved to the archive (mode ``pruned``, ``pruned_by`` ttl or
pareto) with their lesson tiers and skill-pool counters in the archive row's metadata, as
every archived lesson is (:mod:`memory.procedural.services.lesson_archive`), so
``POST /archive/{id}/restore`` brings the whole lesson back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.consolidation.models import ArchivalMode
from memory.core.models.memory import Memory
from memory.core.services.archive import archive_memories
from memory.procedural.pruning import PruneCandidate, PruneDecision, decide_pruning
from persistence.audit_actions import AuditAction
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
        Memory.objects.live(now)
        .select_for_update()
        .filter(company_id=agent.company_id, agent=agent, category="procedural", is_shared=False)
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
    archive_memories(  # keeps each lesson's tiers and counters (services/lesson_archive.py)
        memories=[m for m in memories if m.pk in reasons],
        modes=dict.fromkeys(reasons, ArchivalMode.PRUNED),
        summary_memory_id=None,
        now=now,
        metadata={pk: {"pruned_by": reason} for pk, reason in reasons.items()},
    )
    Memory.objects.filter(pk__in=list(reasons)).delete()
    audit_record(
        company=agent.company,
        actor_agent=None,
        action_type=AuditAction.PROCEDURAL_MEMORY_PRUNED,
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
