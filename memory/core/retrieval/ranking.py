"""Linear ranking: ``combined = w_rel · relevance + w_rec · exp(-rate · age_hours)``.

Personal (non-shared) entries get ``personal_boost`` added to their relevance (capped at 1);
entries without a relevance score use ``default_relevance``. Entries whose combined score is
below ``min_relevance`` are dropped; the rest are sorted by combined score (ties keep input
order) and truncated to ``max_results``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

K = TypeVar("K")


@dataclass(frozen=True)
class Candidate(Generic[K]):
    key: K
    relevance: float | None
    created_at: datetime
    is_shared: bool = False


@dataclass(frozen=True)
class Scored(Generic[K]):
    key: K
    relevance: float
    recency: float
    combined: float
    is_shared: bool


def recency_score(created_at: datetime, now: datetime, decay_rate: float) -> float:
    """``exp(-decay_rate · age_hours)``; 1.0 for zero age, future timestamps clamp to 1.0."""
    age_hours = (now - created_at).total_seconds() / 3600.0
    if age_hours <= 0:
        return 1.0
    return math.exp(-decay_rate * age_hours)


def combined_score(
    relevance: float, recency: float, *, relevance_weight: float, recency_weight: float
) -> float:
    """Weighted sum clamped to [0, 1] (the clamp only absorbs float error in the weights)."""
    value = relevance_weight * relevance + recency_weight * recency
    return min(1.0, max(0.0, value))


def rank_linear(
    candidates: Sequence[Candidate[K]],
    *,
    now: datetime,
    relevance_weight: float,
    recency_weight: float,
    decay_rate: float,
    personal_boost: float,
    default_relevance: float,
    min_relevance: float,
    max_results: int,
) -> list[Scored[K]]:
    """Score, filter by ``min_relevance``, sort (stable) and truncate ``candidates``."""
    if max_results < 1:
        raise ValueError("max_results must be at least 1")
    scored: list[Scored[K]] = []
    for candidate in candidates:
        relevance = default_relevance if candidate.relevance is None else candidate.relevance
        relevance = min(1.0, max(0.0, relevance))
        if not candidate.is_shared:
            relevance = min(relevance + personal_boost, 1.0)
        recency = recency_score(candidate.created_at, now, decay_rate)
        combined = combined_score(
            relevance, recency, relevance_weight=relevance_weight, recency_weight=recency_weight
        )
        if combined >= min_relevance:
            scored.append(Scored(candidate.key, relevance, recency, combined, candidate.is_shared))
    scored.sort(key=lambda s: -s.combined)  # list.sort is stable: ties keep input order
    return scored[:max_results]
