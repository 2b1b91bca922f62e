"""The proposers: a separate LLM call turns an execution report into a lesson.

Pure (no Django import): takes a :class:`~synthorg.llm.CompletionProvider` and a payload,
returns a validated :class:`ProceduralMemoryProposal` or raises :class:`ProposalError`.
Following the EvoSkill separation, the agent that failed never writes its own lesson: the
proposer sees only the (redacted) report — task metadata, error, tool calls and counts —
never the conversation.

Two system prompts: the failure proposer asks "what should be done differently next time,
and when does that apply"; the lighter success proposer asks "what made this run work, as a
reusable strategy".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memory.procedural.domain import (
    DISCOVERY_MAX,
    MAX_PROPOSAL_TAGS,
    MAX_STEPS,
    PROPOSAL_JSON_SCHEMA,
    TIER_TEXT_MAX,
    FailureAnalysisPayload,
    ProceduralMemoryProposal,
    ProposalError,
    SuccessAnalysisPayload,
    parse_proposal,
)
from synthorg.llm.base import ChatMessage, Completion, CompletionProvider
from synthorg.llm.structured import complete_json, json_schema_format

_SHAPE = f"""Answer with ONE JSON object and nothing else:
{{
  "name": "short-kebab-case-skill-name",
  "discovery": "one or two sentences (<= {DISCOVERY_MAX} chars) an agent would search for",
  "condition": "when this lesson applies (<= {TIER_TEXT_MAX} chars)",
  "action": "what to do in that situation (<= {TIER_TEXT_MAX} chars)",
  "rationale": "why this works (<= {TIER_TEXT_MAX} chars)",
  "execution_steps": ["ordered concrete steps", "... (1 to {MAX_STEPS})"],
  "confidence": 0.0-1.0 (how sure you are the lesson generalises),
  "tags": ["up to {MAX_PROPOSAL_TAGS} short topic tags"],
  "scope": "agent" | "role" | "department" | "org"
}}"""

FAILURE_SYSTEM_PROMPT = f"""You analyse a failed or partially failed task execution of an AI \
agent and write ONE procedural lesson for next time: "when you meet <condition>, do \
<action>, because <rationale>". You are not the agent that failed; judge the evidence only.
Use only the execution report you are given (task metadata, error, tool calls, retry and \
turn counts, what the agent tried). Do not invent facts that are not in it. Never include \
secrets, credentials or personal data. If the report does not support a useful lesson, \
answer with a low confidence.
{_SHAPE}"""

SUCCESS_SYSTEM_PROMPT = f"""You analyse a task execution of an AI agent that succeeded with \
a high quality score and extract ONE reusable strategy other runs of similar tasks should \
follow: "when you meet <condition>, do <action>, because <rationale>". Focus on what made \
the run work (tool order, checks, shortcuts), not on restating the task. Use only the report \
you are given; never include secrets, credentials or personal data. If nothing in it is \
reusable, answer with a low confidence.
{_SHAPE}"""


def failure_payload(report: Mapping[str, Any]) -> FailureAnalysisPayload:
    """The failure proposer's view of a (redacted) report, given as a mapping of its fields."""
    return FailureAnalysisPayload(
        task_title=report["task_title"],
        task_type=report["task_type"],
        task_description=report["task_description"],
        outcome=report["outcome"],
        error_category=report["error_category"],
        error_message=report["error_message"],
        tool_calls=list(report["tool_calls"]),
        retry_count=report["retry_count"],
        turn_count=report["turn_count"],
        duration_ms=report["duration_ms"],
        recovery=report["recovery"],
    )


def success_payload(report: Mapping[str, Any]) -> SuccessAnalysisPayload:
    return SuccessAnalysisPayload(
        task_title=report["task_title"],
        task_type=report["task_type"],
        task_description=report["task_description"],
        quality_score=report["quality_score"],
        tool_calls=list(report["tool_calls"]),
        turn_count=report["turn_count"],
        duration_ms=report["duration_ms"],
    )


def proposer_messages(
    payload: FailureAnalysisPayload | SuccessAnalysisPayload,
) -> list[ChatMessage]:
    system = (
        FAILURE_SYSTEM_PROMPT
        if isinstance(payload, FailureAnalysisPayload)
        else SUCCESS_SYSTEM_PROMPT
    )
    report = json.dumps(payload.model_dump(mode="json"), ensure_ascii=False, indent=1)
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=f"Execution report:\n{report}"),
    ]


def proposal_response_format() -> dict:
    """Structured output for proposers and the evolver's drafter (:func:`complete_json`)."""
    return json_schema_format("procedural_lesson", PROPOSAL_JSON_SCHEMA)


def propose(
    provider: CompletionProvider,
    payload: FailureAnalysisPayload | SuccessAnalysisPayload,
    *,
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> tuple[ProceduralMemoryProposal, Completion]:
    """One proposer call. LLM failures raise :class:`~synthorg.llm.LLMError`; an answer that
    is not a valid proposal raises :class:`ProposalError`."""
    completion = complete_json(
        provider,
        proposer_messages(payload),
        response_format=proposal_response_format(),
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    truncated = completion.finish_reason == "length"
    try:
        return parse_proposal(completion.content, truncated=truncated), completion
    except ProposalError:
        if truncated:
            raise ProposalError("proposer answer truncated (max_tokens reached)") from None
        raise
