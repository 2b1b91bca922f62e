"""Rule-based lessons: what an execution report teaches, rendered from data (pure).

:func:`rule_lesson` renders the three tiers an LLM proposer writes — discovery, activation
(condition / action / rationale) and execution steps — from the report's advice and evidence
(:mod:`memory.procedural.advice`): the situation (task type, error category, failing tool,
outcome) and the directives the report's own fields support. The discovery names the advice,
not the failure ("'deploy' tasks with a 'timeout' error in `helm_upgrade`: do what the agent
reported as its recovery: …"); the rationale is the evidence sentence, every fact in it
computed from the report. Nothing is invented: a field the report leaves empty is left out.

The wording is fixed so two reports of the same failure (same situation and advice) yield the
same discovery text, which the write gate then deduplicates like any lesson. Rule lessons
carry :data:`RULE_CONFIDENCE` and the ``rule-based`` tag; once an LLM answers, the capture
is run again and the LLM lesson supersedes the rule lesson.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.procedural.advice import (
    EXCERPT,
    RECOVERY,
    SEQUENCE,
    Advice,
    Evidence,
    advice_for_report,
    evidence_of,
    render_evidence,
)
from memory.procedural.domain import (
    DISCOVERY_MAX,
    MAX_STEPS,
    PROPOSAL_TAG_MAX,
    STEP_MAX,
    TIER_TEXT_MAX,
    ProceduralMemoryProposal,
    ProceduralScope,
)
from synthorg.text import clip

RULE_CONFIDENCE = 0.6
RULE_TAG = "rule-based"
WITHOUT_LLM = "Written without an LLM, from the report's fields."


def task_phrase(advice: Advice, *, plural: bool = False) -> str:
    kind = advice.situation.task_type
    if plural:
        return f"'{kind}' tasks" if kind else "tasks"
    return f"a '{kind}' task" if kind else "a task"


def situation_phrase(advice: Advice) -> str:
    """The situation, as the start of a title: "'deploy' tasks with a 'timeout' error in
    `helm_upgrade`"."""
    s = advice.situation
    text = task_phrase(advice, plural=True)
    if s.outcome == "succeeded":
        return text
    text += f" with a '{s.error_category or 'error'}' error"
    return text + (f" in `{s.tool}`" if s.tool else "")


def advice_phrase(advice: Advice) -> str:
    """The directives as one clause: what to do, then what to avoid."""
    ordered = sorted(advice.directives, key=lambda d: d.stance != "do")
    parts = [d.sentence().rstrip(".") for d in ordered]
    if not parts:
        return "no advice the report supports"
    return "; ".join(p[:1].lower() + p[1:] for p in parts)


def advice_title(advice: Advice) -> str:
    """What a lesson or skill is called: the situation and the advice."""
    return f"{situation_phrase(advice)}: {advice_phrase(advice)}."


def action_text(advice: Advice) -> str:
    return " ".join(d.sentence() for d in sorted(advice.directives, key=lambda d: d.stance != "do"))


def condition_text(advice: Advice, *, message: str = "") -> str:
    s = advice.situation
    if s.outcome == "succeeded":
        return f"you start {task_phrase(advice)}."
    where = f" in `{s.tool}`" if s.tool else ""
    text = f"{task_phrase(advice)} meets a '{s.error_category or 'error'}' error{where}"
    return text + (f" ({clip(message, EXCERPT)})." if message else ".")


def steps_text(advice: Advice, *, message: str = "") -> list[str]:
    s = advice.situation
    steps: list[str] = []
    if s.outcome != "succeeded":
        subject = f"`{s.tool}`" if s.tool else "the failing step"
        first = f"Before running {subject} in {task_phrase(advice)}, expect a "
        first += f"'{s.error_category or 'error'}' error"
        steps.append(first + (f": {clip(message, EXCERPT)}" if message else "."))
    for directive in sorted(advice.directives, key=lambda d: d.stance != "do"):
        if directive.kind == SEQUENCE and directive.stance == "do":
            steps += [f"Run `{name.strip()}`." for name in directive.action.split(">")]
        elif directive.kind == RECOVERY and directive.stance == "do":
            steps.append(f"Apply the reported recovery: {directive.action}")
        else:
            steps.append(directive.sentence())
    return steps or ["Repeat the approach of the run."]


def rule_lesson(report: Mapping[str, Any], *, path: str) -> ProceduralMemoryProposal:
    """The rule lesson of ``report`` (a mapping of its fields, as the proposer payload is
    built from); ``path`` is the capture path, ``failure`` or ``success``."""
    if path == "success" and report.get("outcome") in (None, ""):
        report = {**report, "outcome": "succeeded"}
    advice = advice_for_report(report)
    return rendered_proposal(
        advice, evidence_of([report]), message=_message(report), note=WITHOUT_LLM
    )


def _message(report: Mapping[str, Any]) -> str:
    if report.get("outcome") == "succeeded":
        return ""
    return str(report.get("error_message") or "")


def rendered_proposal(
    advice: Advice,
    evidence: Evidence,
    *,
    message: str = "",
    note: str = "",
    confidence: float = RULE_CONFIDENCE,
    scope: ProceduralScope = ProceduralScope.AGENT,
    name: str = "",
    tags: tuple[str, ...] = (RULE_TAG,),
) -> ProceduralMemoryProposal:
    """The proposal whose every tier is rendered from ``advice`` and ``evidence``."""
    s = advice.situation
    rationale = render_evidence(evidence) + (f" {note}" if note else "")
    default_name = "-".join(
        filter(None, [s.task_type or "task", s.error_category, s.tool or None])
    ) + ("-success" if s.outcome == "succeeded" else "")
    return ProceduralMemoryProposal(
        name=(name or default_name)[:64],
        discovery=clip(advice_title(advice), DISCOVERY_MAX),
        condition=clip(condition_text(advice, message=message), TIER_TEXT_MAX),
        action=clip(action_text(advice) or "Follow the approach of the run.", TIER_TEXT_MAX),
        rationale=clip(rationale, TIER_TEXT_MAX),
        execution_steps=[clip(step, STEP_MAX) for step in steps_text(advice, message=message)][
            :MAX_STEPS
        ],
        confidence=confidence,
        tags=[t[:PROPOSAL_TAG_MAX] for t in (*tags, s.task_type, s.error_category) if t][:5],
        scope=scope,
        advice=advice.as_dict(),
    )
