"""Rule-based lessons: what an execution report teaches when no LLM is configured (pure).

:func:`rule_lesson` composes the same three tiers an LLM proposer writes — discovery,
activation (condition / action / rationale) and execution steps — from the report's
structured fields only: task type, error category and message, the failing tool, the retry
count, the recovery the agent reported and the tools that finally succeeded. Nothing is
invented: a field the report leaves empty is left out of the text.

The wording is fixed so two reports of the same failure (same task type, error category and
failing tool) yield the same discovery text, which the write gate then deduplicates like any
lesson. Rule lessons carry :data:`RULE_CONFIDENCE` and the ``rule-based`` tag; once an LLM
answers, the capture is run again and the LLM lesson supersedes the rule lesson.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory.procedural.domain import (
    DISCOVERY_MAX,
    MAX_STEPS,
    PROPOSAL_TAG_MAX,
    STEP_MAX,
    TIER_TEXT_MAX,
    ProceduralMemoryProposal,
    ProceduralScope,
)

RULE_CONFIDENCE = 0.6
RULE_TAG = "rule-based"
FAILED_STATUSES = frozenset({"failed", "timeout"})
EXCERPT = 300


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _tools(calls: Sequence[Mapping[str, Any]]) -> list[dict]:
    return [c for c in calls if isinstance(c, Mapping) and str(c.get("name") or "").strip()]


def _distinct(names) -> list[str]:
    seen: list[str] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def _failing_call(calls: list[dict]) -> tuple[int, dict] | tuple[None, None]:
    """The last call that failed or timed out (the one the run ended on), with its index."""
    for index in range(len(calls) - 1, -1, -1):
        if calls[index].get("status") in FAILED_STATUSES:
            return index, calls[index]
    return None, None


def _times(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _task(report: Mapping[str, Any]) -> str:
    kind = (report.get("task_type") or "").strip()
    return f"a '{kind}' task" if kind else "a task"


def rule_lesson(report: Mapping[str, Any], *, path: str) -> ProceduralMemoryProposal:
    """The rule lesson of ``report`` (a mapping of its fields, as the proposer payload is
    built from); ``path`` is the capture path, ``failure`` or ``success``."""
    if path == "success":
        return _success_lesson(report)
    return _failure_lesson(report)


def _failure_lesson(report: Mapping[str, Any]) -> ProceduralMemoryProposal:
    calls = _tools(report.get("tool_calls") or [])
    index, failing = _failing_call(calls)
    tool = str(failing["name"]) if failing else ""
    category = (report.get("error_category") or "").strip() or "error"
    message = _clip(report.get("error_message") or (failing or {}).get("error") or "", EXCERPT)
    retries = int(report.get("retry_count") or 0)
    recovery = _clip(report.get("recovery") or "", EXCERPT)
    after = calls[index + 1 :] if index is not None else []
    worked = _distinct(str(c["name"]) for c in after if c.get("status") == "succeeded")
    task = _task(report)
    where = f" in `{tool}`" if tool else ""

    subject = f"`{tool}`" if tool else "the failing step"
    partial = report.get("outcome") == "partial"
    discovery = f"{task[0].upper()}{task[1:]} failed with a '{category}' error{where}"
    if retries:
        discovery += f"; {_times(retries, 'retry', 'retries')} did not help"
    discovery += "."
    condition = f"When {task} meets a '{category}' error{where}"
    condition += f" ({message})." if message else "."
    if worked:
        action = f"Do what finally worked: {' > '.join(worked)}."
    elif recovery and partial:
        action = f"Apply the recovery the agent reported: {recovery}"
    elif recovery:
        action = (
            f"Do not repeat what was tried ({recovery}); change {subject}'s inputs or escalate."
        )
    else:
        action = f"Do not repeat {subject} unchanged; change its inputs or escalate."
    rationale = (
        f"Rule-based lesson from one {report.get('outcome') or 'failed'} execution report "
        f"(written without an LLM): error category '{category}'"
        + (f", failing tool `{tool}`" if tool else "")
        + f", {_times(retries, 'retry', 'retries')}"
        + (f", what finally succeeded: {' > '.join(worked)}" if worked else "")
        + "."
    )
    steps = [f"Before running {subject} in {task}, expect a '{category}' error"]
    steps[0] += f": {message}" if message else "."
    if worked:
        steps.append(f"Run what finally succeeded: {' > '.join(worked)}.")
    elif recovery and partial:
        steps.append(f"Apply the recovery the agent reported: {recovery}")
    else:
        steps.append("If it fails, do not retry unchanged: change the inputs or escalate.")
        if recovery:
            steps.append(f"Already tried without success: {recovery}")
    tags = [RULE_TAG, report.get("task_type") or "", category]
    return _proposal(
        name=f"{report.get('task_type') or 'task'}-{category}-{tool or 'failure'}",
        discovery=discovery,
        condition=condition,
        action=action,
        rationale=rationale,
        steps=steps,
        tags=tags,
    )


def _success_lesson(report: Mapping[str, Any]) -> ProceduralMemoryProposal:
    calls = _tools(report.get("tool_calls") or [])
    worked = _distinct(str(c["name"]) for c in calls if c.get("status") == "succeeded")
    task = _task(report)
    score = report.get("quality_score")
    quality = f" (quality {score:g})" if isinstance(score, int | float) else ""
    sequence = " > ".join(worked)
    discovery = f"{task[0].upper()}{task[1:]} succeeded{quality}"
    discovery += f" with the tool order {sequence}." if sequence else "."
    condition = f"When you start {task}."
    action = (
        f"Follow the tool order that worked: {sequence}."
        if sequence
        else "Follow the approach of the run that scored well."
    )
    rationale = (
        f"Rule-based lesson written without an LLM from one succeeded execution report"
        f"{quality}, {int(report.get('turn_count') or 0)} turns."
    )
    steps = [f"Run `{name}`." for name in worked] or ["Repeat the approach of the run."]
    return _proposal(
        name=f"{report.get('task_type') or 'task'}-success",
        discovery=discovery,
        condition=condition,
        action=action,
        rationale=rationale,
        steps=steps,
        tags=[RULE_TAG, report.get("task_type") or ""],
    )


def _proposal(*, name, discovery, condition, action, rationale, steps, tags):
    return ProceduralMemoryProposal(
        name=name[:64],
        discovery=_clip(discovery, DISCOVERY_MAX),
        condition=_clip(condition, TIER_TEXT_MAX),
        action=_clip(action, TIER_TEXT_MAX),
        rationale=_clip(rationale, TIER_TEXT_MAX),
        execution_steps=[_clip(step, STEP_MAX) for step in steps[:MAX_STEPS]],
        confidence=RULE_CONFIDENCE,
        tags=[tag[:PROPOSAL_TAG_MAX] for tag in tags if tag][:5],
        scope=ProceduralScope.AGENT,
    )
