"""Does a proposed org skill conflict with, replace or sit beside an existing one?
(pure: no Django import)

Texts are compared as sets of lower-cased words (letters and digits):

* ``jaccard(a, b) = |A ∩ B| / |A ∪ B|``
* ``coverage(new, old) = |NEW ∩ OLD| / |OLD|`` — how much of the old condition the new one
  covers (1.0 when the new condition is a superset of the old).

Verdicts, in this order — **CONFLICT is checked before FULL**, so contradictory actions for
the same situation are never accepted as a supersession:

1. ``CONFLICT``: condition Jaccard ≥ 0.5 and action Jaccard < 0.5 (same situation, different
   advice) ⇒ no promotion; escalated to a human with both texts.
2. ``FULL``: condition coverage ≥ 0.8, action Jaccard ≥ 0.5 and a higher confidence than the
   existing entry ⇒ the proposal replaces it once approved.
3. ``PARTIAL``: everything else ⇒ both coexist.

Against several existing skills, any CONFLICT wins; else the FULL match with the highest
condition coverage; else PARTIAL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

CONDITION_OVERLAP = 0.5
ACTION_SIMILAR = 0.5
CONDITION_COVERAGE = 0.8

_WORD = re.compile(r"[a-z0-9]+")


class Verdict(StrEnum):
    CONFLICT = "CONFLICT"
    FULL = "FULL"
    PARTIAL = "PARTIAL"
    #: not a supersession judgement: set on the item when the proposal's advice contradicts
    #: live lessons or core policies (memory.procedural.contradictions), listed in its evidence
    CONTRADICTS = "CONTRADICTS"


@dataclass(frozen=True)
class Skill:
    condition: str
    action: str
    confidence: float
    ref: str = ""  # the existing entry's id (empty for the proposal)
    content: str = ""
    kind: str = "fact"  # the existing entry's store: a ``procedure`` fact or a pool memory

    def as_entry(self) -> dict:
        """The entry as an approval item's evidence names it (``fact_id`` / ``memory_id``)."""
        return {f"{self.kind}_id": self.ref, "content": self.content}


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    existing: Skill | None = None
    condition_jaccard: float = 0.0
    action_jaccard: float = 0.0
    condition_coverage: float = 0.0


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    left, right = words(a), words(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def coverage(new: str, old: str) -> float:
    old_words = words(old)
    return len(words(new) & old_words) / len(old_words) if old_words else 0.0


def judge_one(proposal: Skill, existing: Skill) -> Judgement:
    cond_j = jaccard(proposal.condition, existing.condition)
    act_j = jaccard(proposal.action, existing.action)
    cover = coverage(proposal.condition, existing.condition)
    measures = {"condition_jaccard": cond_j, "action_jaccard": act_j, "condition_coverage": cover}
    if cond_j >= CONDITION_OVERLAP and act_j < ACTION_SIMILAR:
        return Judgement(Verdict.CONFLICT, existing, **measures)
    if (
        cover >= CONDITION_COVERAGE
        and act_j >= ACTION_SIMILAR
        and proposal.confidence > existing.confidence
    ):
        return Judgement(Verdict.FULL, existing, **measures)
    return Judgement(Verdict.PARTIAL, existing, **measures)


def judge(proposal: Skill, existing: Iterable[Skill]) -> Judgement:
    judgements = [judge_one(proposal, skill) for skill in existing]
    conflicts = [j for j in judgements if j.verdict is Verdict.CONFLICT]
    if conflicts:
        return max(conflicts, key=lambda j: j.condition_jaccard)
    full = [j for j in judgements if j.verdict is Verdict.FULL]
    if full:
        return max(full, key=lambda j: j.condition_coverage)
    return Judgement(Verdict.PARTIAL)
