"""An operator's org skill: the one write path for a skill a person states (issue 34 item 4).

:func:`operator_skill_publish` is what every interface calls (``POST /api/v1/org-skills``, the
console's and the admin's *Add org skill* forms). It takes the skill as fields — what it is,
when it applies, what to do (and what not to), why, the steps — never as prose to be read
back: in one transaction it publishes the ``procedure`` fact agents retrieve (its text
rendered from the fields, through :func:`orgmemory.services.facts.fact_publish`, so the
company's write rule, the log and the audit apply as to any fact) and stores the structure
beside it in the org skill store (:func:`memory.procedural.skills.org_skill_store`,
``source`` ``operator``).

Its advice (what the contradiction check and the context assembly compare) is built from the
fields too: *do* the action, *avoid* each ``avoid`` entry, in the situation the optional
``task_type`` / ``error_category`` / ``tool`` name (empty: every situation). Its confidence is
a person's (1.0), so the evolver never supersedes it without a human approving.

Retracting the fact (any interface that retracts facts) retires the skill:
:func:`~memory.procedural.skills.org_skills` derives ``retired_at`` from the retraction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from django.db import transaction
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from memory.procedural.advice import OPERATOR, Advice, Directive, Situation
from memory.procedural.domain import refuse_nul, skill_name
from memory.procedural.evolver.skill_text import HUMAN_CONFIDENCE, SkillFields
from memory.procedural.models import OrgSkill
from memory.procedural.skills import org_skill_store
from orgmemory.services.facts import (
    ACTOR_COMPANY_MISMATCH,
    author_for,
    deny_write,
    fact_publish,
)
from orgmemory.write_access import explain_write_access
from persistence.models import Company
from persistence.principal import Principal
from persistence.selectors.config import company_config
from synthorg.enums import OrgFactCategory
from synthorg.errors import AccessDeniedError, NotFoundError, invalid_input_from

OPERATOR_SKILL_HUMANS_ONLY = "Only a person publishes an operator skill; agents propose skills."
INVALID_OPERATOR_SKILL = "The skill is invalid: {error}"
#: the tags of an operator skill's fact
OPERATOR_TAGS = ("skill", "operator")
MAX_AVOID = 20
SITUATION_MAX = 100

_Situation = Annotated[str, StringConstraints(strip_whitespace=True, max_length=SITUATION_MAX)]
_Avoid = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1_000)]


class OperatorSkillInput(BaseModel):
    """What a person fills in. ``name`` defaults to a slug of ``discovery``; the texts are
    validated as every org skill's are (:class:`SkillFields`). Unknown fields are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    discovery: str
    condition: str
    action: str
    rationale: str
    steps: list[str]
    avoid: list[_Avoid] = Field(default_factory=list, max_length=MAX_AVOID)
    task_type: _Situation = ""
    error_category: _Situation = ""
    tool: _Situation = ""

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # The REST parser refuses NUL already; the service holds for every caller (JSONB
        # cannot store one).
        return refuse_nul(value)

    def skill(self) -> SkillFields:
        return SkillFields(
            name=self.name.strip() or skill_name(self.discovery, fallback="skill"),
            discovery=self.discovery,
            condition=self.condition,
            action=self.action,
            rationale=self.rationale,
            steps=self.steps,
            confidence=HUMAN_CONFIDENCE,
        )

    def advice(self, fields: SkillFields) -> Advice:
        situation = Situation(
            task_type=self.task_type, error_category=self.error_category, tool=self.tool
        )
        directives = (
            Directive("do", fields.action, OPERATOR),
            *(Directive("avoid", text, OPERATOR) for text in self.avoid),
        )
        return Advice(situation, directives)


def operator_skill_validate(data: Mapping[str, Any]) -> tuple[SkillFields, Advice]:
    """The skill's structure and advice, or ``InvalidInputError`` (400 ``invalid_skill``)
    listing every field error."""
    try:
        given = OperatorSkillInput.model_validate(dict(data))
        fields = given.skill()
    except ValidationError as exc:
        raise invalid_input_from(exc, INVALID_OPERATOR_SKILL, code="invalid_skill") from exc
    return fields, given.advice(fields)


def operator_skill_publish(
    *, company: Company, actor: Principal, data: Mapping[str, Any]
) -> OrgSkill:
    """Publish a person's skill: its ``procedure`` fact and its structure, in one transaction.

    Raises ``AccessDeniedError`` (an agent: ``humans_only``), ``NotFoundError`` (an actor of
    another company), ``InvalidInputError`` (``invalid_skill``), and what ``fact_publish``
    raises — ``OrgMemoryAccessDeniedError`` when the company's write rule refuses the person
    ``procedure`` facts (audited as any denied fact write).
    """
    if not actor.is_human:
        raise AccessDeniedError(OPERATOR_SKILL_HUMANS_ONLY, code="humans_only")
    if actor.company.pk != company.pk:
        raise NotFoundError(ACTOR_COMPANY_MISMATCH, code="not_found")
    fields, advice = operator_skill_validate(data)
    # Asked before the transaction so that a denial's audit row (committed on its own by
    # deny_write) is not rolled back with the refused write; fact_publish asks again inside.
    decision = explain_write_access(
        company_config(company).org_memory.write_access,
        OrgFactCategory.PROCEDURE,
        author_for(actor),
    )
    if not decision.allowed:
        raise deny_write(company=company, principal=actor, decision=decision, operation="publish")
    with transaction.atomic():
        entry = fact_publish(
            company=company,
            actor=actor,
            content=fields.render(),
            category=OrgFactCategory.PROCEDURE,
            tags=list(OPERATOR_TAGS),
        )
        return org_skill_store(
            company=company,
            source=OrgSkill.Source.OPERATOR,
            fields=fields.model_dump(),
            advice=advice.as_dict(),
            fact_id=entry.fact_id,
            fact_version=entry.version,
            created_at=entry.timestamp,
        )
