"""Procedural-memory pruning strategies (pure: no Django import).

Run per agent over its live PROCEDURAL memories (``memory.procedural.pruning``):

* ``ttl`` — prune entries whose last use is older than ``max_age_days``. "Last use" is the
  later of ``created_at`` and ``last_applied_at``: a lesson agents keep applying is not stale.
* ``pareto`` — keep at most ``max_entries``. Each entry has two objectives, **relevance**
  (the proposer's confidence, boosted by how often agents applied it:
  ``confidence × (1 + ln(1 + application_count))``) and **recency** (last use, normalised to
  [0, 1] over the agent's entries). Entries are kept frontier by frontier (non-dominated
  sorting: the first frontier is every entry no other entry beats on both objectives, the
  second the frontier of what remains, ...); the frontier that would overflow the cap, even
  the first one alone, is cut down to its newest entries.
* ``hybrid`` — TTL first, then Pareto over what remains.
* ``none`` — prune nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class PruneCandidate:
    id: Any
    created_at: datetime
    confidence: float
    application_count: int = 0
    last_applied_at: datetime | None = None

    @property
    def last_used(self) -> datetime:
        if self.last_applied_at is None:
            return self.created_at
        return max(self.created_at, self.last_applied_at)

    @property
    def relevance(self) -> float:
        return self.confidence * (1.0 + math.log1p(max(0, self.application_count)))


@dataclass(frozen=True)
class PruneDecision:
    ttl: tuple[Any, ...] = ()  # ids pruned because they are too old
    pareto: tuple[Any, ...] = ()  # ids pruned to respect max_entries

    @property
    def pruned(self) -> tuple[Any, ...]:
        return self.ttl + self.pareto


def ttl_expired(
    entries: Sequence[PruneCandidate], *, now: datetime, max_age_days: int
) -> list[PruneCandidate]:
    cutoff = now - timedelta(days=max_age_days)
    return [e for e in entries if e.last_used < cutoff]


def normalised_recency(entries: Sequence[PruneCandidate]) -> dict[Any, float]:
    """Last use mapped to [0, 1] (oldest 0, newest 1; all 1 when they are equal)."""
    if not entries:
        return {}
    stamps = {e.id: e.last_used.timestamp() for e in entries}
    low, high = min(stamps.values()), max(stamps.values())
    if high == low:
        return dict.fromkeys(stamps, 1.0)
    return {key: (value - low) / (high - low) for key, value in stamps.items()}


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and (a[0] > b[0] or a[1] > b[1])


def pareto_frontiers(entries: Sequence[PruneCandidate]) -> list[list[PruneCandidate]]:
    """Non-dominated sorting over (relevance, normalised recency); O(n²) per frontier,
    fine for the few hundred lessons one agent holds."""
    recency = normalised_recency(entries)
    points = {e.id: (e.relevance, recency[e.id]) for e in entries}
    remaining = list(entries)
    frontiers: list[list[PruneCandidate]] = []
    while remaining:
        frontier = [
            e
            for e in remaining
            if not any(_dominates(points[o.id], points[e.id]) for o in remaining if o is not e)
        ]
        frontiers.append(frontier)
        kept = {id(e) for e in frontier}
        remaining = [e for e in remaining if id(e) not in kept]
    return frontiers


def _newest_first(entries: Sequence[PruneCandidate]) -> list[PruneCandidate]:
    return sorted(entries, key=lambda e: (e.last_used, e.created_at, str(e.id)), reverse=True)


def pareto_excess(entries: Sequence[PruneCandidate], *, max_entries: int) -> list[PruneCandidate]:
    """The entries to prune so that at most ``max_entries`` remain."""
    if len(entries) <= max_entries:
        return []
    keep: list[PruneCandidate] = []
    for frontier in pareto_frontiers(entries):
        room = max_entries - len(keep)
        if room <= 0:
            break
        keep.extend(_newest_first(frontier)[:room])
    kept = {id(e) for e in keep}
    return [e for e in entries if id(e) not in kept]


def decide_pruning(
    entries: Sequence[PruneCandidate], *, config: Any, now: datetime
) -> PruneDecision:
    """Apply the ``ProceduralPruningConfig`` strategy to one agent's entries."""
    strategy = config.strategy
    if strategy == "none":
        return PruneDecision()
    if strategy not in ("ttl", "pareto", "hybrid"):
        raise ValueError(f"unknown pruning strategy {strategy!r}")
    expired: list[PruneCandidate] = []
    if strategy in ("ttl", "hybrid"):
        expired = ttl_expired(entries, now=now, max_age_days=config.max_age_days)
    if strategy == "ttl":
        return PruneDecision(ttl=tuple(e.id for e in expired))
    gone = {id(e) for e in expired}
    rest = [e for e in entries if id(e) not in gone]
    excess = pareto_excess(rest, max_entries=config.max_entries)
    return PruneDecision(ttl=tuple(e.id for e in expired), pareto=tuple(e.id for e in excess))
