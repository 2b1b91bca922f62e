"""Maximal Marginal Relevance with word-bigram Jaccard similarity.

``MMR(c) = λ · score(c) − (1 − λ) · max_{s ∈ selected} sim(c, s)``; the entry with the best
MMR is selected next (ties: the earlier entry). ``λ = 1`` keeps the input order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def word_bigrams(text: str) -> frozenset[tuple[str, str]]:
    words = text.lower().split()
    return frozenset(itertools.pairwise(words))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def bigram_jaccard(text_a: str, text_b: str) -> float:
    """Jaccard of the word-bigram sets; 0.0 when either text has fewer than two words."""
    return jaccard(word_bigrams(text_a), word_bigrams(text_b))


def mmr_rerank(
    items: Sequence[T],
    *,
    score: Callable[[T], float],
    text: Callable[[T], str],
    diversity_lambda: float,
    similarity_fn: Callable[[str, str], float] | None = None,
) -> list[T]:
    """Re-order ``items`` (all of them) by MMR. Bigram sets are computed once per item."""
    if not 0.0 <= diversity_lambda <= 1.0:
        raise ValueError("diversity_lambda must be in [0, 1]")
    remaining = list(range(len(items)))
    if similarity_fn is None:
        grams = [word_bigrams(text(item)) for item in items]

        def sim(i: int, j: int) -> float:
            return jaccard(grams[i], grams[j])
    else:
        texts = [text(item) for item in items]

        def sim(i: int, j: int) -> float:
            return similarity_fn(texts[i], texts[j])

    scores = [score(item) for item in items]
    max_sim = [0.0] * len(items)
    order: list[int] = []
    while remaining:
        best = max(
            remaining,
            key=lambda i: (diversity_lambda * scores[i] - (1 - diversity_lambda) * max_sim[i], -i),
        )
        order.append(best)
        remaining.remove(best)
        for i in remaining:
            max_sim[i] = max(max_sim[i], sim(i, best))
    return [items[i] for i in order]
