"""Bounded growth (seed R5): extraction must not grow an agent's store without limit.

After each extraction the agent is held at the company's ``max_memories_per_agent`` by the
one cap policy maintenance applies too (:func:`memory.core.services.archive.
memories_enforce_cap`): its memories (private ones and the shared entries it published)
beyond the cap are moved to the archive — lowest confidence first, then oldest; a shared one
with a retraction on record — and so stay restorable (``POST /archive/{id}/restore``). The
current core summary (tag ``core``) is never trimmed.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from memory.core.services.archive import memories_enforce_cap
from persistence.models import Agent
from persistence.selectors.config import company_config

TRIM_BATCH = 500
TRIMMED_REASON = "over max_memories_per_agent ({limit}) after extraction"


def memories_trim_to_cap(*, agent: Agent, now: datetime | None = None) -> int:
    """Hold ``agent`` at ``max_memories_per_agent`` after an extraction, by the one cap
    policy maintenance applies too (:func:`~memory.core.services.archive.
    memories_enforce_cap`); returns how many memories were moved to the archive."""
    limit = company_config(agent.company).memory.consolidation.max_memories_per_agent
    outcome = memories_enforce_cap(
        agent=agent,
        limit=limit,
        reason=TRIMMED_REASON.format(limit=limit),
        now=now or timezone.now(),
        batch_size=TRIM_BATCH,
    )
    return outcome.archived
