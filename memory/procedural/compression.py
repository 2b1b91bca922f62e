"""The GEMS two-tier experience compressor's pure parts (no Django import).

Tier 1 is the raw trace: an execution report and what its capture made of it, rendered by
:func:`raw_trace`. Tier 2 is one strategic learning: what to do next time, in at most a few
sentences. With an LLM the learning is the model's answer to :func:`compressor_messages`
(JSON ``{"learning": ...}``, parsed by :func:`parse_learning`); without one it is
:func:`extractive_learning`: the capture's lesson discovery when there is one (already a
learned summary), else a sentence assembled from the report's own fields.

``compression_ratio = 1 - len(learning) / len(raw)`` (0 for an empty trace, never below 0):
0.0 keeps everything, values near 1.0 demand a short learning from a long trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from synthorg.llm import ChatMessage
from synthorg.llm.replies import ReplyFormatError, reply_json

COMPRESSOR_VERSION = "gems-2tier-1"
LEARNING_MAX = 1_000

SYSTEM_PROMPT = (
    "You compress one execution trace of an AI agent into ONE strategic learning: what an "
    "agent should do (or avoid) the next time it meets this situation, in at most two "
    "sentences. No narration of the run, no names, no secrets. Answer with JSON only: "
    '{"learning": "<text>"}'
)


class CompressionError(ValueError):
    """The compressor's answer is not a usable learning."""


def raw_trace(report: Mapping[str, Any], lesson: Mapping[str, Any] | None) -> str:
    """Tier 1: the report (already redacted) and its capture's lesson, as Markdown."""
    lines = [
        f"# {report.get('task_title') or 'Execution report'}",
        f"- outcome: {report.get('outcome')}",
    ]
    for key in ("task_type", "error_category", "error_message", "recovery"):
        if report.get(key):
            lines.append(f"- {key.replace('_', ' ')}: {report[key]}")
    for key in ("retry_count", "turn_count", "duration_ms", "quality_score"):
        if report.get(key) not in (None, 0, ""):
            lines.append(f"- {key.replace('_', ' ')}: {report[key]}")
    calls: Sequence[Mapping[str, Any]] = report.get("tool_calls") or []
    if calls:
        lines.append("## Tool calls")
        for call in calls:
            error = f" — {call['error']}" if call.get("error") else ""
            lines.append(f"- {call.get('name')}: {call.get('status')}{error}")
    if lesson:
        lines += [
            "## Capture",
            f"- lesson: {lesson['discovery']}",
            f"- when: {lesson['condition']}",
            f"- do: {lesson['action']}",
            f"- why: {lesson['rationale']}",
        ]
        lines += [f"  {n}. {step}" for n, step in enumerate(lesson["execution_steps"], 1)]
    return "\n".join(lines)


def extractive_learning(report: Mapping[str, Any], lesson: Mapping[str, Any] | None) -> str:
    """The no-LLM learning: the lesson's discovery, else one sentence from the fields."""
    if lesson and str(lesson.get("discovery", "")).strip():
        return str(lesson["discovery"]).strip()[:LEARNING_MAX]
    task = report.get("task_type") or "task"
    failed = [
        str(call.get("name"))
        for call in report.get("tool_calls") or []
        if call.get("status") in ("failed", "timeout")
    ]
    if report.get("outcome") == "succeeded":
        worked = [str(c.get("name")) for c in report.get("tool_calls") or []]
        order = f" in this tool order: {', '.join(worked)}" if worked else ""
        return f"For a '{task}' task, repeat the approach that succeeded{order}."[:LEARNING_MAX]
    cause = report.get("error_category") or "an error"
    where = f" in {', '.join(failed)}" if failed else ""
    return f"A '{task}' task can fail with {cause}{where}; plan for it before retrying."[
        :LEARNING_MAX
    ]


def compression_ratio(raw: str, learning: str) -> float:
    if not raw:
        return 0.0
    return round(max(0.0, 1.0 - len(learning) / len(raw)), 4)


def compressor_messages(raw: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content=SYSTEM_PROMPT),
        ChatMessage(role="user", content=f"Execution trace:\n{raw}"),
    ]


def parse_learning(text: str, *, truncated: bool = False) -> str:
    try:
        data = reply_json(text, truncated=truncated, expect=dict)
    except ReplyFormatError as exc:
        raise CompressionError(f"invalid JSON from compressor: {exc}") from None
    learning = data.get("learning")
    if not isinstance(learning, str) or not learning.strip():
        raise CompressionError("compressor answer has no 'learning' text")
    if "\x00" in learning:
        raise CompressionError("compressor answer contains NUL characters")
    return learning.strip()[:LEARNING_MAX]
