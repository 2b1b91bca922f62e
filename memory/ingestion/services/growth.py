"""Bounded growth (seed R5): extraction must not grow an agent's store without limit.

After each extraction the agent's private hot store is held at the company's
``max_memories_per_agent``: the excess is moved to the archive — lowest confidence first,
then oldest — and so stays restorable (``POST /archive/{id}/restore``). The current core
summary (tag ``core``) is never trimmed. Shared knowledge is the company's, not counted.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.consolidation.models import ArchivalMode
from memory.core.domain import CORE_TAG
from memory.core.models.memory import Memory
from memory.core.services.archive import memories_archive_out
from persistence.models import Agent
from persistence.selectors.config import company_config

TRIM_BATCH = 500
TRIMMED_REASON = "over max_memories_per_agent ({limit}) after extraction"


def memories_trim_to_cap(*, agent: Agent, now: datetime | None = None) -> int:
    """Archive ``agent``'s private memories beyond ``max_memories_per_agent``; returns how
    many were moved."""
    now = now or timezone.now()
    limit = company_config(agent.company).memory.consolidation.max_memories_per_agent
    moved = 0
    while True:
        with transaction.atomic():
            private = Memory.objects.filter(
                company_id=agent.company_id, agent=agent, is_shared=False
            )
            excess = private.count() - limit
            if excess <= 0:
                return moved
            victims = list(
                private.exclude(tags__contains=[CORE_TAG], superseded_at__isnull=True)
                .select_for_update(skip_locked=True)
                .order_by("confidence", "created_at", "id")[: min(excess, TRIM_BATCH)]
            )
            if not victims:
                return moved
            outcome = memories_archive_out(
                agent=agent,
                memories=victims,
                mode=ArchivalMode.CAPPED,
                reason=TRIMMED_REASON.format(limit=limit),
                now=now,
            )
        moved += len(outcome.archived)
