"""An org skill's structure and the text of the ``procedure`` fact rendered from it (pure).

An approved promotion is stored as an :class:`~memory.procedural.evolver.models.OrgSkill`
(validated by :class:`SkillFields`) and published as one ``procedure`` fact whose text is
rendered from that structure::

    <discovery>
    When: <condition>
    Do: <action>
    Why: <rationale>
    Steps:
    1. <step>

with tags ``skill``, ``confidence:<0.00>``, ``pattern:<key>`` and ``approval:<item id>``.
The evolver never reads its own skills back from that text: it judges supersession on the
stored structure, as it does an operator's skill (stored from the fields the person filled in,
:mod:`memory.procedural.services.operator_skills`). Only a procedure fact without one — free
text a person published as a fact, or a new version a person published of a skill's fact —
is read by :func:`parse`: its ``When:`` / ``Do:`` lines if the
person wrote them, else its whole text as both condition and action; with no
``confidence:`` tag its confidence is 1.0 — the evolver never claims to know better than a
person (such an entry is never FULL-superseded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memory.procedural.domain import DISCOVERY_MAX, TIER_TEXT_MAX, skill_name

HUMAN_CONFIDENCE = 1.0
TAG_MAX = 64
MAX_SKILL_STEPS = 50
SKILL_STEP_MAX = 1_000

_Text = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=TIER_TEXT_MAX)
]
_Step = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=SKILL_STEP_MAX)
]


class SkillFields(BaseModel):
    """What an org skill is: its name, when to use it, what to do, the steps, why, and the
    evidence it was approved on. Unknown fields are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
    discovery: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=DISCOVERY_MAX)
    ]
    condition: _Text
    action: _Text
    rationale: _Text
    steps: list[_Step] = Field(min_length=1, max_length=MAX_SKILL_STEPS)
    confidence: float = Field(ge=0.0, le=1.0)
    pattern: str = Field(default="", max_length=200)
    report_count: int = Field(default=0, ge=0)
    agent_count: int = Field(default=0, ge=0)

    @classmethod
    def from_proposal(cls, proposal: Mapping[str, Any], evidence: Mapping[str, Any]) -> SkillFields:
        """An approved item's proposal (as the approver left it) and evidence."""
        agents = evidence.get("agent_ids") or evidence.get("agents") or []
        return cls(
            name=skill_name(str(proposal.get("name") or proposal["discovery"]), fallback="skill"),
            discovery=proposal["discovery"],
            condition=proposal["condition"],
            action=proposal["action"],
            rationale=proposal["rationale"],
            steps=list(proposal["execution_steps"]),
            confidence=float(evidence.get("confidence", 0.0)),
            pattern=str(evidence.get("pattern", ""))[:200],
            report_count=int(evidence.get("report_count") or len(evidence.get("report_ids") or [])),
            agent_count=len(agents) if isinstance(agents, list) else 0,
        )

    def render(self) -> str:
        """The ``procedure`` fact's text (what retrieval ranks and context shows)."""
        return render(
            {
                "discovery": self.discovery,
                "condition": self.condition,
                "action": self.action,
                "rationale": self.rationale,
                "execution_steps": self.steps,
            }
        )


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
    """(condition, action, confidence) of a procedure fact without structure (a person's)."""
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
