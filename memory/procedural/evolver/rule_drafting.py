"""Drafting an org skill without an LLM: from the pattern's member lessons' own text (pure).

The agents' lessons for the pattern's reports (LLM or rule lessons) already say what to do
in their three tiers. :func:`rule_draft` takes the lesson most of them share (the most
frequent discovery text; ties go to the earliest) and proposes it as the org skill, with a
rationale naming the evidence. When no member report has a lesson yet, the rule lesson of the
pattern's first report is drafted instead (:func:`memory.procedural.rule_lessons.rule_lesson`).
Either way a human reviews the ApprovalItem before anything is published.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from memory.procedural.domain import TIER_TEXT_MAX, ProceduralMemoryProposal, ProceduralScope
from memory.procedural.rule_lessons import RULE_TAG, rule_lesson


def rule_draft(
    *,
    pattern: str,
    kind: str,
    agents: int,
    confidence: float,
    lessons: Sequence[Mapping[str, Any]],
    reports: Sequence[Mapping[str, Any]],
    without_lessons: str = "no lesson yet",
) -> ProceduralMemoryProposal:
    """``lessons``: dicts with discovery, condition, action, rationale, execution_steps (in
    creation order); ``reports``: the member reports' fields (for the no-lesson case);
    ``without_lessons``: why there are none, said in that case's rationale."""
    evidence = f"{len(reports)} reports of {agents} agents ({pattern})"
    if lessons:
        counts = Counter(lesson["discovery"] for lesson in lessons)
        top = max(counts.values())
        chosen = next(lesson for lesson in lessons if counts[lesson["discovery"]] == top)
        rationale = (
            f"{chosen['rationale']} Drafted without an LLM from the agents' own lessons: "
            f"{top} of {len(lessons)} lessons for {evidence} say this."
        )
        return ProceduralMemoryProposal(
            name=pattern.replace(":", "-")[:64],
            discovery=chosen["discovery"],
            condition=chosen["condition"],
            action=chosen["action"],
            rationale=rationale[:TIER_TEXT_MAX],
            execution_steps=list(chosen["execution_steps"]) or [chosen["action"][:1000]],
            confidence=confidence,
            tags=[RULE_TAG],
            scope=ProceduralScope.ORG,
        )
    first = dict(reports[0]) if reports else {}
    lesson = rule_lesson(first, path="success" if kind == "success" else "failure")
    rationale = f"{lesson.rationale} Drafted without an LLM for {evidence}; {without_lessons}."
    return lesson.model_copy(
        update={
            "name": pattern.replace(":", "-")[:64],
            "rationale": rationale[:TIER_TEXT_MAX],
            "confidence": confidence,
            "scope": ProceduralScope.ORG,
        }
    )
