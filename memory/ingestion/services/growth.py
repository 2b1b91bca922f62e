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
from memory.core.models.memory import Memory
from memory.core.services.archive import archive_memories
from persistence.models import Agent
from persistence.selectors.config import company_config

CORE_TAG = "core"
TRIM_BATCH = 500


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
            archive_memories(
                memories=victims,
                modes={m.pk: ArchivalMode.EXTRACTIVE for m in victims},
                summary_memory_id=None,
                now=now,
            )
            Memory.objects.filter(pk__in=[m.pk for m in victims]).delete()
            moved += len(victims)
