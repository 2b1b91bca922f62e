"""Consolidation strategies: which memories fold into which summary.

Every strategy groups candidate entries by ``(namespace, category)``, cuts each group into
chunks of at most ``max_group_size`` (oldest first) and consolidates each chunk that has at
least ``group_threshold`` entries: the most relevant entry (highest confidence, then newest)
is kept as it is; the others are removed from the hot store and replaced by **one summary**.
The strategies differ in how the summary is written:

* :class:`SimpleStrategy` — a bullet list of the removed entries, each truncated.
* :class:`DualModeStrategy` — density-routed: if most entries of the chunk are dense, the
  summary is extractive (verbatim facts + anchors, :class:`ExtractivePreserver`), otherwise
  abstractive (an LLM summary, truncation fallback, :class:`AbstractiveSummarizer`).
* :class:`LLMStrategy` — an LLM synthesis of the chunk within the seed's input limits,
  falling back to the simple bullet list when the LLM is unavailable.

A strategy only *plans* (pure; the LLM call is its only I/O); the service applies a plan.
A chunk whose summary cannot be produced is reported in ``errors`` and left untouched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

from memory.core.consolidation.abstractive import AbstractiveSummarizer, truncate
from memory.core.consolidation.density import DensityClassifier
from memory.core.consolidation.extractive import ExtractivePreserver
from memory.core.consolidation.models import (
    ArchivalMode,
    ArchivalModeAssignment,
    ConsolidationEntry,
    ContentDensity,
)
from synthorg.llm import LLMError

DEFAULT_MAX_GROUP_SIZE = 50
SUMMARY_MAX_CHARS = 20_000  # the hot store's content limit
LLM_SYNTHESIS_INSTRUCTION = (
    "Synthesise these related memories into one consolidated memory. Merge duplicates, keep "
    "every distinct fact, decision, name, date and number, drop chatter."
)


@dataclass(frozen=True)
class GroupPlan:
    namespace: str
    category: str
    kept: ConsolidationEntry
    removed: tuple[ConsolidationEntry, ...]
    summary: str
    mode: ArchivalMode
    method: str  # "concatenation" | "extractive" | "llm" | "truncation"

    @property
    def mode_assignments(self) -> tuple[ArchivalModeAssignment, ...]:
        return tuple(ArchivalModeAssignment(original_id=e.id, mode=self.mode) for e in self.removed)


@dataclass
class ConsolidationPlan:
    groups: list[GroupPlan] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def removed_ids(self) -> tuple[UUID, ...]:
        return tuple(e.id for g in self.groups for e in g.removed)


class ConsolidationStrategy(Protocol):
    name: str

    def plan(self, entries: Sequence[ConsolidationEntry]) -> ConsolidationPlan: ...


def _relevance_key(entry: ConsolidationEntry) -> tuple:
    return (entry.confidence, entry.created_at, str(entry.id))


def chunk_groups(
    entries: Sequence[ConsolidationEntry], *, group_threshold: int, max_group_size: int
) -> list[list[ConsolidationEntry]]:
    """Chunks to consolidate, in a deterministic order (namespace, category, age)."""
    groups: dict[tuple[str, str], list[ConsolidationEntry]] = defaultdict(list)
    for entry in entries:
        groups[(entry.namespace, str(entry.category))].append(entry)
    chunks: list[list[ConsolidationEntry]] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda e: (e.created_at, str(e.id)))
        for start in range(0, len(members), max_group_size):
            chunk = members[start : start + max_group_size]
            if len(chunk) >= group_threshold:
                chunks.append(chunk)
    return chunks


def split_kept(chunk: Sequence[ConsolidationEntry]) -> tuple[ConsolidationEntry, list]:
    kept = max(chunk, key=_relevance_key)
    return kept, [e for e in chunk if e.id != kept.id]


def bullet_summary(removed: Sequence[ConsolidationEntry], truncate_length: int) -> str:
    header = f"Consolidated {len(removed)} memories:"
    lines = [header]
    size = len(header)
    for index, entry in enumerate(removed):
        day = entry.created_at.date().isoformat()
        line = f"- [{day}] {truncate(entry.content, truncate_length)}"
        if size + len(line) + 1 > SUMMARY_MAX_CHARS - 40:
            lines.append(f"- … and {len(removed) - index} more")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def joined_content(removed: Sequence[ConsolidationEntry], per_entry: int, total: int) -> str:
    parts: list[str] = []
    size = 0
    for entry in removed:
        part = f"[{entry.created_at.date().isoformat()}] {truncate(entry.content, per_entry)}"
        if size + len(part) > total:
            break
        parts.append(part)
        size += len(part) + 2
    return "\n\n".join(parts)


class SimpleStrategy:
    name = "simple"

    def __init__(
        self,
        *,
        group_threshold: int = 3,
        truncate_length: int = 200,
        max_group_size: int = DEFAULT_MAX_GROUP_SIZE,
    ) -> None:
        self.group_threshold = group_threshold
        self.truncate_length = truncate_length
        self.max_group_size = max_group_size

    def plan(self, entries: Sequence[ConsolidationEntry]) -> ConsolidationPlan:
        plan = ConsolidationPlan()
        for chunk in chunk_groups(
            entries, group_threshold=self.group_threshold, max_group_size=self.max_group_size
        ):
            kept, removed = split_kept(chunk)
            plan.groups.append(
                GroupPlan(
                    namespace=kept.namespace,
                    category=str(kept.category),
                    kept=kept,
                    removed=tuple(removed),
                    summary=bullet_summary(removed, self.truncate_length),
                    mode=ArchivalMode.EXTRACTIVE,
                    method="concatenation",
                )
            )
        return plan


class DualModeStrategy:
    name = "dual_mode"

    def __init__(
        self,
        *,
        classifier: DensityClassifier,
        preserver: ExtractivePreserver,
        summarizer: AbstractiveSummarizer,
        group_threshold: int = 3,
        max_group_size: int = DEFAULT_MAX_GROUP_SIZE,
        max_input_chars: int = 20_000,
    ) -> None:
        self.classifier = classifier
        self.preserver = preserver
        self.summarizer = summarizer
        self.group_threshold = group_threshold
        self.max_group_size = max_group_size
        self.max_input_chars = max_input_chars

    def plan(self, entries: Sequence[ConsolidationEntry]) -> ConsolidationPlan:
        plan = ConsolidationPlan()
        for chunk in chunk_groups(
            entries, group_threshold=self.group_threshold, max_group_size=self.max_group_size
        ):
            kept, removed = split_kept(chunk)
            density = self.classifier.majority([e.content for e in removed])
            if density is ContentDensity.DENSE:
                text = "\n\n".join(e.content for e in removed)
                summary, mode, method = (
                    self.preserver.extract(text),
                    ArchivalMode.EXTRACTIVE,
                    ("extractive"),
                )
            else:
                text = joined_content(removed, self.max_input_chars, self.max_input_chars)
                try:
                    result = self.summarizer.summarize(text)
                except LLMError as exc:
                    plan.errors.append(_chunk_error(kept, exc))
                    continue
                summary, method = result.text, result.method
                mode = ArchivalMode.ABSTRACTIVE if method == "llm" else ArchivalMode.EXTRACTIVE
            plan.groups.append(
                GroupPlan(
                    namespace=kept.namespace,
                    category=str(kept.category),
                    kept=kept,
                    removed=tuple(removed),
                    summary=summary[:SUMMARY_MAX_CHARS],
                    mode=mode,
                    method=method,
                )
            )
        return plan


class LLMStrategy:
    name = "llm"

    def __init__(
        self,
        *,
        summarizer: AbstractiveSummarizer,
        group_threshold: int = 3,
        max_entry_input_chars: int = 2000,
        max_total_user_content_chars: int = 20_000,
        fallback_truncate_length: int = 200,
        max_group_size: int = DEFAULT_MAX_GROUP_SIZE,
    ) -> None:
        self.summarizer = summarizer
        self.group_threshold = group_threshold
        self.max_entry_input_chars = max_entry_input_chars
        self.max_total_user_content_chars = max_total_user_content_chars
        self.fallback_truncate_length = fallback_truncate_length
        self.max_group_size = max_group_size

    def plan(self, entries: Sequence[ConsolidationEntry]) -> ConsolidationPlan:
        plan = ConsolidationPlan()
        for chunk in chunk_groups(
            entries, group_threshold=self.group_threshold, max_group_size=self.max_group_size
        ):
            kept, removed = split_kept(chunk)
            text = joined_content(
                removed, self.max_entry_input_chars, self.max_total_user_content_chars
            )
            try:
                result = self.summarizer.summarize(text, instruction=LLM_SYNTHESIS_INSTRUCTION)
            except LLMError as exc:
                plan.errors.append(_chunk_error(kept, exc))
                continue
            if result.method == "llm":
                summary, mode, method = result.text, ArchivalMode.ABSTRACTIVE, "llm"
            else:  # the seed's concatenation fallback
                summary = bullet_summary(removed, self.fallback_truncate_length)
                mode, method = ArchivalMode.EXTRACTIVE, "concatenation"
            plan.groups.append(
                GroupPlan(
                    namespace=kept.namespace,
                    category=str(kept.category),
                    kept=kept,
                    removed=tuple(removed),
                    summary=summary[:SUMMARY_MAX_CHARS],
                    mode=mode,
                    method=method,
                )
            )
        return plan


def _chunk_error(kept: ConsolidationEntry, exc: Exception) -> str:
    return f"consolidation of {kept.namespace}/{kept.category} skipped: {type(exc).__name__}: {exc}"
