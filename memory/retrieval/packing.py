"""Greedy token-budget packing and the default token estimate (``len(text) // 4``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def estimate_tokens(text: str) -> int:
    """0 for empty text, else ``max(1, len(text) // 4)``."""
    if not text:
        return 0
    return max(1, len(text) // 4)


def pack_greedy(
    items: Sequence[T], *, cost: Callable[[T], int], budget: int
) -> tuple[list[T], list[T], int]:
    """Take items in rank order while they fit; an item that does not fit is skipped and
    packing continues with the next (smaller ones may still fit).

    Returns ``(included, dropped, tokens_used)``.
    """
    included: list[T] = []
    dropped: list[T] = []
    used = 0
    for item in items:
        tokens = cost(item)
        if tokens < 0:
            raise ValueError("token cost must not be negative")
        if used + tokens <= budget:
            included.append(item)
            used += tokens
        else:
            dropped.append(item)
    return included, dropped, used
