"""Reciprocal Rank Fusion: ``score(d) = Σ 1 / (k + rank_i(d))`` over the lists holding ``d``.

Ranks start at 1. Scores are min-max normalised to [0, 1] (all equal ⇒ all 1.0). When the
same key appears in several lists the first item encountered is kept; ties in the fused
score keep first-seen order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")

DEFAULT_RRF_K = 60


def rrf_scores(
    ranked_lists: Sequence[Sequence[T]],
    *,
    k: int = DEFAULT_RRF_K,
    key: Callable[[T], Hashable] = lambda item: item,
) -> dict[Hashable, float]:
    """``key → Σ 1/(k + rank)`` (raw, unnormalised), in first-seen order."""
    if k < 1:
        raise ValueError("k must be at least 1")
    raw: dict[Hashable, float] = {}
    for ranked in ranked_lists:
        seen_here: set[Hashable] = set()
        for rank, item in enumerate(ranked, start=1):
            item_key = key(item)
            if item_key in seen_here:  # a list names each document once
                continue
            seen_here.add(item_key)
            raw[item_key] = raw.get(item_key, 0.0) + 1.0 / (k + rank)
    return raw


def rrf_fuse(
    ranked_lists: Sequence[Sequence[T]],
    *,
    k: int = DEFAULT_RRF_K,
    key: Callable[[T], Hashable] = lambda item: item,
    max_results: int | None = None,
) -> list[tuple[T, float]]:
    """Fuse best-first ``ranked_lists``; returns ``(item, normalised score)`` best first."""
    if max_results is not None and max_results < 1:
        raise ValueError("max_results must be at least 1")
    first: dict[Hashable, T] = {}
    for ranked in ranked_lists:
        for item in ranked:
            first.setdefault(key(item), item)
    raw = rrf_scores(ranked_lists, k=k, key=key)
    if not raw:
        return []
    high, low = max(raw.values()), min(raw.values())
    span = high - low
    ordered = sorted(raw, key=lambda item_key: -raw[item_key])  # stable: first-seen on ties
    fused = [
        (first[item_key], (raw[item_key] - low) / span if span > 0 else 1.0) for item_key in ordered
    ]
    return fused if max_results is None else fused[:max_results]
