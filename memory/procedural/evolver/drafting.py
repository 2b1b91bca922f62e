"""The org-level proposer: one LLM call drafts a skill from a cross-agent pattern (pure).

The LLM sees the pattern's aggregate evidence — its key, rate, how many agents and reports,
task types, a few (already redacted) error messages, tool sequences and recovery notes —
never conversations. It answers with the procedural proposal schema, scope ``org``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memory.procedural.advice import render_evidence
from memory.procedural.answer_checks import ANSWER_REFUSED, answer_problems
from memory.procedural.domain import (
    DISCOVERY_MAX,
    MAX_STEPS,
    TIER_TEXT_MAX,
    ProceduralMemoryProposal,
    ProceduralScope,
    ProposalError,
    parse_proposal,
)
from memory.procedural.evolver.rule_drafting import SkillAdvice
from memory.procedural.proposer import proposal_response_format
from memory.procedural.rule_lessons import action_text
from synthorg.llm.base import ChatMessage, Completion, CompletionProvider
from synthorg.llm.structured import complete_json
from synthorg.text import clip

SYSTEM_PROMPT = f"""You turn a pattern seen across the task executions of SEVERAL AI agents \
of one organisation into ONE organisation-wide skill every agent should follow: "when you \
meet <condition>, do <action>, because <rationale>". A human reviews your proposal before \
anyone uses it. Word the advice given in "advice_to_word" (computed from the reports; \
do not advise otherwise) and use only the evidence given; do not invent facts or counts. \
Never include secrets, \
credentials or personal data. Keep the condition specific enough that it does not fire on \
unrelated work.
Answer with ONE JSON object and nothing else:
{{
  "name": "short-kebab-case-skill-name",
  "discovery": "one or two sentences (<= {DISCOVERY_MAX} chars) an agent would search for",
  "condition": "when this skill applies (<= {TIER_TEXT_MAX} chars)",
  "action": "what to do (<= {TIER_TEXT_MAX} chars)",
  "rationale": "why (<= {TIER_TEXT_MAX} chars)",
  "execution_steps": ["ordered concrete steps (1 to {MAX_STEPS})"],
  "confidence": 0.0-1.0,
  "tags": ["short topic tags"],
  "scope": "org"
}}"""

SAMPLES = 5


def evidence_payload(
    *,
    pattern: str,
    kind: str,
    rate: float,
    agents: int,
    reports: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    def distinct(values):
        seen: list = []
        for value in values:
            if value and value not in seen:
                seen.append(value)
        return seen[:SAMPLES]

    return {
        "pattern": pattern,
        "kind": kind,
        ("failure_rate" if kind == "failure" else "success_rate"): round(rate, 4),
        "distinct_agents": agents,
        "reports": len(reports),
        "task_types": distinct(r.get("task_type") for r in reports),
        "error_messages": distinct(r.get("error_message") for r in reports),
        "tool_sequences": distinct(
            " > ".join(c.get("name", "") for c in r.get("tool_calls") or []) for r in reports
        ),
        "recovery_notes": distinct(r.get("recovery") for r in reports),
    }


def with_advice(payload: dict[str, Any], found: SkillAdvice) -> dict[str, Any]:
    """The payload with what the reports support: the advice to word (computed from the
    reports, the same rule the agents' lessons follow) and the facts, which the answer may
    not restate differently (they are rendered from the records after the answer)."""
    return {
        **payload,
        "advice_to_word": action_text(found.advice),
        "advice": found.advice.as_dict(),
        "reports_supporting_it": found.support,
        "facts": found.evidence.as_dict(),
    }


def draft(
    provider: CompletionProvider,
    payload: dict[str, Any],
    *,
    found: SkillAdvice,
    records: list[dict[str, Any]],
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> tuple[ProceduralMemoryProposal, Completion]:
    """Raises ``LLMError`` (the call failed) or ``ProposalError`` (unusable answer, or one
    :func:`~memory.procedural.answer_checks.answer_problems` refuses). The accepted draft
    advises what the reports support (``found``) and its rationale ends with the evidence
    computed from them."""
    payload = with_advice(payload, found)
    messages = [
        ChatMessage(role="system", content=SYSTEM_PROMPT),
        ChatMessage(
            role="user",
            content="Cross-agent evidence:\n" + json.dumps(payload, ensure_ascii=False, indent=1),
        ),
    ]
    completion = complete_json(
        provider,
        messages,
        response_format=proposal_response_format(),
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    proposal = parse_proposal(completion.content, truncated=completion.finish_reason == "length")
    if proposal.scope is not ProceduralScope.ORG:
        proposal = proposal.model_copy(update={"scope": ProceduralScope.ORG})
    if not proposal.execution_steps:
        raise ProposalError("proposal has no execution steps")
    problems = answer_problems(proposal, records=records, advice=found.advice)
    if problems:
        raise ProposalError(f"{ANSWER_REFUSED}: {'; '.join(problems)}")
    rationale = f"{proposal.rationale} {found.support_note} {render_evidence(found.evidence)}"
    proposal = proposal.model_copy(
        update={"advice": found.advice.as_dict(), "rationale": clip(rationale, TIER_TEXT_MAX)}
    )
    return proposal, completion
