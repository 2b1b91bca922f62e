"""The non-inferable filter: only memories tagged ``non-inferable`` reach a prompt.

Filtering fails closed: if a filter raises, nothing is injected (returning everything would
bypass a privacy/cost control).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")

NON_INFERABLE_TAG = "non-inferable"

logger = logging.getLogger(__name__)


@runtime_checkable
class MemoryFilterStrategy(Protocol):
    @property
    def strategy_name(self) -> str: ...

    def filter_for_injection(
        self, items: Sequence[T], tags: Callable[[T], Iterable[str]]
    ) -> list[T]: ...


class TagBasedMemoryFilter:
    """Keeps items carrying ``required_tag`` (compared case-insensitively), in order."""

    def __init__(self, required_tag: str = NON_INFERABLE_TAG) -> None:
        self.required_tag = required_tag.strip().lower()

    @property
    def strategy_name(self) -> str:
        return "tag_based"

    def filter_for_injection(self, items, tags):
        return [item for item in items if self.required_tag in {t.lower() for t in tags(item)}]


class PassthroughMemoryFilter:
    @property
    def strategy_name(self) -> str:
        return "passthrough"

    def filter_for_injection(self, items, tags):
        return list(items)


def apply_filter(
    memory_filter: MemoryFilterStrategy, items: Sequence[T], tags: Callable[[T], Iterable[str]]
) -> tuple[list[T], bool]:
    """``(kept, failed)``: on any exception from the filter, ``([], True)`` (fail closed)."""
    try:
        return list(memory_filter.filter_for_injection(items, tags)), False
    except Exception:
        logger.exception("memory filter %r failed; injecting nothing", memory_filter)
        return [], True
