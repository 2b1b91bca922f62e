"""Applying an approved promotion: the one place an evolver proposal reaches org memory.

Runs inside the approval service's deciding transaction (registered as the applier of
``skill_evolver:org_promotion`` and ``skill_evolver:conflict``): publishes exactly one
``procedure`` fact through the org-fact service — as the system, on behalf of the approving
human (the approval authorises it, so a ``procedure`` rule that excludes humans does not block
it) — and its structure, an :class:`~memory.procedural.evolver.models.OrgSkill` validated by
:class:`~memory.procedural.evolver.skill_text.SkillFields` from the proposal's tiers as the
approver left them (edit-then-approve) and the item's evidence; the fact's text is rendered
from that structure and tagged ``approval:<item id>``; retracts the entry it replaces (a FULL
verdict's superseded skill, or the existing skill of an approved conflict); then consumes the
item. Any error rolls the
approval back with it.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from memory.procedural.evolver import skill_text
from memory.procedural.evolver.models import OrgSkill
from memory.procedural.evolver.services import PROCEDURE
from orgmemory.models import ApprovalItem, OrgFact
from orgmemory.services.approvals import approval_consume
from orgmemory.services.facts import fact_publish_approved, fact_retract_approved
from persistence.principal import Principal
from synthorg.errors import InvalidInputError

INVALID_SKILL = "The approved proposal is not a valid skill: {errors}"

logger = logging.getLogger("memory.procedural.evolver")


def promotion_apply(item: ApprovalItem, actor: Principal) -> None:
    """Approved ``skill_evolver:org_promotion``: publish; on a FULL verdict retract the old."""
    evidence = item.evidence
    superseded = evidence.get("superseded") if evidence.get("verdict") == "FULL" else None
    _publish_replacing(item, actor, superseded["fact_id"] if superseded else None)


def conflict_apply(item: ApprovalItem, actor: Principal) -> None:
    """Approved ``skill_evolver:conflict``: the human chose the proposed skill over the existing
    one it contradicts, so the proposal is published and the existing skill retracted.
    (Rejecting keeps the existing skill and publishes nothing.)"""
    _publish_replacing(item, actor, item.evidence["existing"]["fact_id"])


def _publish_replacing(item: ApprovalItem, actor: Principal, replaces: str | None) -> None:
    try:
        fields = skill_text.SkillFields.from_proposal(item.metadata["proposal"], item.evidence)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        message = INVALID_SKILL.format(errors=exc)
        raise InvalidInputError(message[:2000], code="invalid_skill") from exc
    entry = fact_publish_approved(
        company=item.company,
        approver=actor,
        approval_item_id=item.pk,
        content=fields.render(),
        category=PROCEDURE,
        tags=skill_text.tags(
            confidence=fields.confidence, pattern=fields.pattern, item_id=str(item.pk)
        ),
    )
    OrgSkill.objects.create(
        fact_id=entry.fact_id,
        company=item.company,
        fact_version=entry.version,
        approval_item=item.pk,
        created_at=entry.timestamp,
        **fields.model_dump(),
    )
    if replaces:
        live = OrgFact.objects.filter(
            company=item.company, fact_id=replaces, retracted_at__isnull=True
        ).exists()
        if live:
            fact_retract_approved(
                company=item.company,
                approver=actor,
                approval_item_id=item.pk,
                fact_id=replaces,
                reason=f"superseded by {entry.fact_id} (approval {item.pk})",
            )
            logger.info(
                "ORG_SKILL_SUPERSEDED company=%s old=%s new=%s item=%s",
                item.company.slug,
                replaces,
                entry.fact_id,
                item.pk,
            )
    approval_consume(company=item.company, item_id=item.pk)
