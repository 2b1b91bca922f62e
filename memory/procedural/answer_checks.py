"""Is an LLM's lesson or skill draft fit to store? Checked against the records (pure).

A model's answer can be valid JSON of the right shape and still be nonsense — a small local
model answered a helm timeout with ``{"condition": "null", "action": "destroy", "rationale":
"100%"}``. :func:`answer_problems` lists why an answer is refused (empty: it may be stored):

* **placeholder** — a tier that says nothing ("null", "none", "n/a", "…") or an action of
  fewer than three words;
* **template** — a tier that copies the prompt's answer template back ("one or two
  sentences (<= 600 chars) …", "short-kebab-case-skill-name");
* **ungrounded** — the discovery, condition and action name nothing of the evidence: no task
  type, error category, tool, nor any word of the error message or the recovery;
* **unstated number** — a count or a rate the answer states ("3 retries", "failed 4 times",
  "100%") that appears nowhere in the records (a setting the advice proposes, "--timeout
  900s", is advice, not a fact);
* **destructive** — advice to destroy, delete, drop, wipe, purge, truncate, ``rm -rf`` or
  force-push that the records never mention;
* **contradicts the evidence** — the text advises against what the records show worked, or
  to do what they show failed (:func:`memory.procedural.advice.contradiction` between the
  data's advice and the directives read from the answer's action and steps).

A refused answer is never stored: the capture (or the draft) stores the rule path's result
with the reason, and the LLM is asked again later.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memory.procedural.advice import (
    Advice,
    Situation,
    action_words,
    contradiction,
    directives_from_text,
    evidence_of,
    render_evidence,
)
from memory.procedural.domain import ProceduralMemoryProposal

ANSWER_REFUSED = "LLM answer refused"
PLACEHOLDERS = frozenset({"", "null", "none", "n/a", "na", "...", "…", "tbd", "todo", "-"})
MIN_ACTION_WORDS = 3
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?")
# a number the advice states as a fact of the evidence (a count, a rate), not a setting
_COUNTED = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%|(?:percent|times|retries|retry|attempts|reports|"
    r"agents|failures|runs)\b)",
    re.IGNORECASE,
)
# the answer template's own words, copied back by a model that did not understand it
_TEMPLATE = re.compile(
    r"<=\s*\d+\s*chars|short-kebab-case|one or two sentences|ordered concrete steps|"
    r"when this (?:lesson|skill) applies \(|what to do \(<=",
    re.IGNORECASE,
)
_DESTRUCTIVE = re.compile(
    r"\b(destroy\w*|delet\w*|drop\w*|wipe\w*|purg\w*|rm\s+-rf|force[- ]push\w*|truncat\w*)",
    re.IGNORECASE,
)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def record_text(records: Iterable[Mapping[str, Any]]) -> str:
    """Every value of the records, as one text (what an answer may quote from)."""
    return "\n".join(text for record in records for text in _strings(dict(record)))


def _numbers(text: str) -> set[str]:
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}


def _anchors(records: Iterable[Mapping[str, Any]], advice: Advice) -> set[str]:
    s = advice.situation
    anchors = {w for w in (s.task_type, s.error_category, s.tool) if w}
    words: set[str] = set()
    for record in records:
        for key in ("error_message", "recovery", "task_title"):
            words |= {w for w in action_words(str(record.get(key) or "")) if len(w) >= 4}
        for call in record.get("tool_calls") or []:
            if isinstance(call, Mapping) and call.get("name"):
                anchors.add(str(call["name"]))
    return {a.lower() for a in anchors} | words


def answer_problems(
    proposal: ProceduralMemoryProposal,
    *,
    records: list[Mapping[str, Any]],
    advice: Advice,
) -> list[str]:
    """Why ``proposal`` may not be stored (empty when it may): see the module docstring.
    ``records``: the reports' fields; ``advice``: what the records support."""
    problems: list[str] = []
    for name in ("discovery", "condition", "action"):
        value = getattr(proposal, name).strip().strip(".").lower()
        if value in PLACEHOLDERS:
            problems.append(f"placeholder: the {name} says {getattr(proposal, name)!r}")
    echoed = [
        name
        for name in ("name", "discovery", "condition", "action", "rationale")
        if _TEMPLATE.search(str(getattr(proposal, name) or ""))
    ]
    if echoed:
        problems.append(f"template: the {', '.join(echoed)} copies the prompt's answer template")
    if len(proposal.action.split()) < MIN_ACTION_WORDS and not problems:
        problems.append(f"placeholder: the action {proposal.action!r} is not advice")
    said = " ".join([proposal.discovery, proposal.condition, proposal.action]).lower()
    anchors = _anchors(records, advice)
    if anchors and not any(anchor in said for anchor in anchors):
        problems.append(
            "ungrounded: it names no task type, error, tool, nor any word of the error or "
            "the recovery"
        )
    source = record_text(records)
    # the records' values, and the counts computed from them (how many reports, outcomes)
    known = _numbers(source) | _numbers(render_evidence(evidence_of(records)))
    answer_text = " ".join(
        [
            proposal.discovery,
            proposal.condition,
            proposal.action,
            proposal.rationale,
            *proposal.execution_steps,
        ]
    )
    unstated = sorted({m.group(1) for m in _COUNTED.finditer(answer_text)} - known)
    if unstated:
        problems.append(f"unstated number: {', '.join(unstated[:5])} appears in no record")
    advised = " ".join([proposal.action, *proposal.execution_steps])
    destructive = {
        m.group(0).lower()
        for m in _DESTRUCTIVE.finditer(advised)
        if m.group(0).lower() not in source.lower()
    }
    if destructive:
        problems.append(
            f"destructive: it advises {', '.join(sorted(destructive))}, which no record mentions"
        )
    said_advice = Advice(
        Situation(),
        directives_from_text("Do: " + proposal.action)
        + directives_from_text("\n".join(f"Do: {step}" for step in proposal.execution_steps)),
    )
    clash = contradiction(advice, said_advice)
    if clash is not None:
        problems.append(f"contradicts the evidence: {clash.reason()}")
    return problems
