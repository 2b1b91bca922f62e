"""The deterministic write gate: near-duplicate detection by Dice overlap (pure; no Django).

Terms are the *normalised* terms of a memory's content: the lexemes Postgres' ``english``
text-search configuration produces (lower-cased, stemmed, stop words removed), so the gate,
the sparse index and the candidate probe all agree on what a term is. Two contents are near
duplicates when ``2·|A∩B| / (|A|+|B|) ≥ DUPLICATE_THRESHOLD``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

DUPLICATE_THRESHOLD = 0.8

K = TypeVar("K")


def dice(a: Collection[str], b: Collection[str]) -> float:
    """Sørensen–Dice coefficient of two term sets (0.0 when both are empty)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 0.0
    return 2 * len(sa & sb) / (len(sa) + len(sb))


def probe_terms(
    terms: Collection[str],
    threshold: float = DUPLICATE_THRESHOLD,
    *,
    frequency: Mapping[str, int] | None = None,
) -> list[str]:
    """Terms of which any near duplicate of ``terms`` must contain at least one.

    With Dice ≥ t the overlap ``i`` satisfies ``i ≥ t(a+b)/2`` and ``b ≥ i``, so
    ``b ≥ t·a/(2-t)`` and ``i ≥ t·a/(2-t)``: a duplicate misses at most ``a - i`` of our
    ``a`` terms, hence any ``a - ceil(i_min) + 1`` of them include one it has: a sound
    candidate pre-filter, after which the exact Dice check runs. Which terms is free: the
    rarest by ``frequency`` (how many documents hold each) find the fewest candidates, then
    longer terms first. The SQL gate (``memory.core.services.store``) does the same with the
    agent's store.
    """
    counts = frequency or {}
    unique = sorted(set(terms), key=lambda t: (counts.get(t, 0), -len(t), t))
    a = len(unique)
    if a == 0:
        return []
    min_overlap = threshold * a / (2 - threshold)
    allowed_missing = a - _ceil(min_overlap - 1e-9)
    return unique[: max(1, allowed_missing + 1)]


def _ceil(value: float) -> int:
    whole = int(value)
    return whole if whole == value else whole + (1 if value > 0 else 0)


@dataclass(frozen=True)
class Candidate(Generic[K]):
    key: K
    terms: frozenset[str]
    order: tuple  # tie-break: smaller wins (e.g. (created_at, id))


def best_duplicate(
    terms: Collection[str],
    candidates: Sequence[Candidate[K]],
    threshold: float = DUPLICATE_THRESHOLD,
) -> K | None:
    """The candidate most similar to ``terms`` at or above ``threshold`` (ties: oldest)."""
    if not terms:
        return None
    best: tuple[float, tuple] | None = None
    best_key: K | None = None
    for candidate in candidates:
        score = dice(terms, candidate.terms)
        if score + 1e-12 < threshold:
            continue
        rank = (-score, candidate.order)
        if best is None or rank < best:
            best, best_key = rank, candidate.key
    return best_key
