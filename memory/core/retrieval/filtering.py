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

#: What agents are told qualifies as non-inferable (seeds 000/001, D23), in the tool-based
#: and self-editing instructions and the store tools' descriptions.
NON_INFERABLE_GUIDANCE = (
    "Tag a memory 'non-inferable' when nobody could work it out by reading the code, the "
    "docs or the environment: design rationale, team decisions, why not X (alternatives "
    "rejected and why), cross-repo knowledge, learned conventions, who to ask about what, "
    "and how past attempts turned out. Do not store what the code or docs already say."
)
#: The advisory entry a store answers with when ``non_inferable_only`` is on and the memory
#: lacks the tag: it is stored all the same, but context injection will never include it.
TAG_MISSING_CODE = "non_inferable_tag_missing"
TAG_MISSING = (
    "Stored, but this company injects only memories tagged 'non-inferable' into prompts "
    "(memory.retrieval.non_inferable_only), and this one has no such tag, so it will be found "
    "by search but never injected as context. If it cannot be inferred from the code or the "
    "environment, add the tag 'non-inferable'."
)
#: The advisory entry of a context the filter emptied.
FILTER_EMPTIED_CODE = "non_inferable_filter_emptied"
FILTER_EMPTIED = (
    "{count} of your memories matched, but none is tagged 'non-inferable' and this company "
    "injects only those (memory.retrieval.non_inferable_only), so none was included."
)


def tag_missing_warnings(*, required: bool, tags: Iterable[str]) -> tuple[dict[str, str], ...]:
    """The advisory warnings of one store: never blocks (D23: warn on a missing tag)."""
    if required and NON_INFERABLE_TAG not in {t.strip().lower() for t in tags}:
        return ({"code": TAG_MISSING_CODE, "message": TAG_MISSING},)
    return ()


def filter_emptied_warning(count: int) -> dict[str, str]:
    return {"code": FILTER_EMPTIED_CODE, "message": FILTER_EMPTIED.format(count=count)}


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


def apply_filter(
    memory_filter: MemoryFilterStrategy, items: Sequence[T], tags: Callable[[T], Iterable[str]]
) -> tuple[list[T], bool]:
    """``(kept, failed)``: on any exception from the filter, ``([], True)`` (fail closed)."""
    try:
        return list(memory_filter.filter_for_injection(items, tags)), False
    except Exception:
        logger.exception("memory filter %r failed; injecting nothing", memory_filter)
        return [], True
