"""Greedy token-budget packing and the default token estimate (``len(text) // 4``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from synthorg.retrieval.tokens import estimate_tokens

T = TypeVar("T")
__all__ = ["estimate_tokens", "pack_greedy", "pack_greedy_with_fallback"]


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


def pack_greedy_with_fallback(
    items: Sequence[T],
    *,
    cost: Callable[[T], int],
    budget: int,
    fallback: Callable[[T], T | None],
) -> tuple[list[T], list[T], int]:
    """:func:`pack_greedy`, except that an item that does not fit is replaced by its
    ``fallback`` (a shorter form, e.g. a lesson's discovery tier alone) when that fits.

    ``included`` holds what was packed (the item or its fallback) in rank order; ``dropped``
    the items for which neither fitted.
    """
    included: list[T] = []
    dropped: list[T] = []
    used = 0
    for item in items:
        for candidate in (item, fallback(item)):
            if candidate is None:
                continue
            tokens = cost(candidate)
            if tokens < 0:
                raise ValueError("token cost must not be negative")
            if used + tokens <= budget:
                included.append(candidate)
                used += tokens
                break
        else:
            dropped.append(item)
    return included, dropped, used
