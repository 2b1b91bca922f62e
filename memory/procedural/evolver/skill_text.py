"""The text of an org skill fact, and reading condition/action back from one (pure).

An approved promotion is published as one ``procedure`` fact::

    <discovery>
    When: <condition>
    Do: <action>
    Why: <rationale>
    Steps:
    1. <step>

with tags ``skill``, ``confidence:<0.00>``, ``pattern:<key>`` and ``approval:<item id>``.
A procedure fact written some other way (by a person) has no such lines: its whole text is
both condition and action, and with no ``confidence:`` tag its confidence is 1.0 — the
evolver never claims to know better than a person (such an entry is never FULL-superseded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

HUMAN_CONFIDENCE = 1.0
TAG_MAX = 64


def render(proposal: Mapping[str, Any]) -> str:
    lines = [
        str(proposal["discovery"]).strip(),
        f"When: {str(proposal['condition']).strip()}",
        f"Do: {str(proposal['action']).strip()}",
        f"Why: {str(proposal['rationale']).strip()}",
        "Steps:",
    ]
    lines += [f"{n}. {str(step).strip()}" for n, step in enumerate(proposal["execution_steps"], 1)]
    return "\n".join(lines)


def tags(*, confidence: float, pattern: str, item_id: str) -> list[str]:
    return [
        "skill",
        f"confidence:{confidence:.2f}",
        f"pattern:{pattern}"[:TAG_MAX],
        f"approval:{item_id}"[:TAG_MAX],
    ]


def parse(content: str, fact_tags: Sequence[str]) -> tuple[str, str, float]:
    """(condition, action, confidence) of an existing procedure fact."""
    condition = action = ""
    for line in content.splitlines():
        if line.startswith("When: "):
            condition = line[6:].strip()
        elif line.startswith("Do: "):
            action = line[4:].strip()
    if not condition or not action:
        condition = action = content
    confidence = HUMAN_CONFIDENCE
    for tag in fact_tags:
        if tag.startswith("confidence:"):
            with suppress(ValueError):
                confidence = float(tag.split(":", 1)[1])
    return condition, action, confidence
