"""Drafting an org skill from a pattern's reports: the advice most of them support (pure).

Each member report's advice is computed from its own fields
(:func:`memory.procedural.advice.advice_for_report`, the same rule the agents' lessons are
written by, so a skill never contradicts the lessons it generalises). :func:`skill_advice`
takes the advice most reports support (ties: the earliest) and narrows its situation to what
those reports share; :func:`rule_draft` renders the skill from it: its title names the advice,
its rationale states the evidence computed from every member report (counts, outcomes, retry
numbers, tools, agents, task types, dates) and how many reports support the advice. A human
reviews the ApprovalItem before anything is published.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memory.procedural.advice import (
    Advice,
    Evidence,
    Situation,
    advice_for_report,
    evidence_of,
    majority_advice,
)
from memory.procedural.domain import ProceduralMemoryProposal, ProceduralScope
from memory.procedural.rule_lessons import RULE_TAG, rendered_proposal

WITHOUT_LLM = "Drafted without an LLM, from the reports' fields."


@dataclass(frozen=True)
class SkillAdvice:
    """What a pattern's reports support, computed from them."""

    advice: Advice
    evidence: Evidence
    support: int  # reports whose own advice is this one
    reports: int
    message: str  # the first supporting report's error message

    @property
    def support_note(self) -> str:
        note = f"{self.support} of {self.reports} reports support this advice"
        differ = self.reports - self.support
        return note + (f"; {differ} advise otherwise." if differ else ".")

    def as_evidence(self) -> dict[str, Any]:
        return {
            "facts": self.evidence.as_dict(),
            "advice": self.advice.as_dict(),
            "support": self.support,
        }


def _shared(values: list[str]) -> str:
    return values[0] if values and all(v == values[0] for v in values) else ""


def skill_advice(
    reports: Sequence[Mapping[str, Any]], *, agent_names: Mapping[Any, str] | None = None
) -> SkillAdvice:
    """The advice most of ``reports`` support, its situation narrowed to what the supporting
    reports share (a field they disagree on is left open), with the evidence of all."""
    advices = [advice_for_report(r) for r in reports]
    chosen, support = majority_advice(advices)
    backing = [s.situation for s in advices if s.signature == chosen.signature]
    situation = Situation(
        task_type=_shared([s.task_type for s in backing]),
        error_category=_shared([s.error_category for s in backing]),
        tool=_shared([s.tool for s in backing]),
        outcome=_shared([s.outcome for s in backing]),
    )
    first = next(
        r for r, a in zip(reports, advices, strict=True) if a.signature == chosen.signature
    )
    message = "" if first.get("outcome") == "succeeded" else str(first.get("error_message") or "")
    return SkillAdvice(
        advice=replace(chosen, situation=situation),
        evidence=evidence_of(reports, agent_names=agent_names),
        support=support,
        reports=len(reports),
        message=message,
    )


def rule_draft(
    *,
    pattern: str,
    confidence: float,
    reports: Sequence[Mapping[str, Any]],
    agent_names: Mapping[Any, str] | None = None,
) -> ProceduralMemoryProposal:
    """The org skill of ``pattern`` rendered from its reports' fields (no LLM)."""
    found = skill_advice(reports, agent_names=agent_names)
    return skill_proposal(found, pattern=pattern, confidence=confidence, note=WITHOUT_LLM)


def skill_proposal(
    found: SkillAdvice, *, pattern: str, confidence: float, note: str
) -> ProceduralMemoryProposal:
    return rendered_proposal(
        found.advice,
        found.evidence,
        message=found.message,
        note=f"{found.support_note} {note}",
        confidence=confidence,
        scope=ProceduralScope.ORG,
        name=pattern.replace(":", "-"),
        tags=(RULE_TAG,),
    )
