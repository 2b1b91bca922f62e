"""Applying an approved promotion: the one place an evolver proposal reaches org memory.

Runs inside the approval service's deciding transaction (registered as the applier of
``skill_evolver:org_promotion`` and ``skill_evolver:conflict``): publishes exactly one
``procedure`` fact through the org-fact service — as the system, on behalf of the approving
human (the approval authorises it, so a ``procedure`` rule that excludes humans does not block
it) — and its structure in the org skill store (:func:`memory.procedural.skills.org_skill_store`,
source ``evolver``), validated by :class:`~memory.procedural.evolver.skill_text.SkillFields`
from the proposal's tiers as the approver left them (edit-then-approve) and the item's
evidence; the fact's text is rendered from that structure and tagged ``approval:<item id>``;
retires the skill it replaces (a FULL verdict's superseded skill, or the existing skill of an
approved conflict: a fact is retracted, a lesson-pool memory superseded); then consumes the
item. Any error rolls the approval back with it.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from memory.procedural.evolver import skill_text
from memory.procedural.evolver.services import PROCEDURE
from memory.procedural.models import OrgSkill
from memory.procedural.skills import org_skill_retire, org_skill_store
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_consume
from orgmemory.services.facts import fact_publish_approved
from persistence.principal import Principal
from synthorg.errors import InvalidInputError

INVALID_SKILL = "The approved proposal is not a valid skill: {errors}"

logger = logging.getLogger("memory.procedural.evolver")


def promotion_apply(item: ApprovalItem, actor: Principal) -> None:
    """Approved ``skill_evolver:org_promotion``: publish; on a FULL verdict retract the old."""
    evidence = item.evidence
    superseded = evidence.get("superseded") if evidence.get("verdict") == "FULL" else None
    _publish_replacing(item, actor, _entry_ref(superseded) if superseded else None)


def conflict_apply(item: ApprovalItem, actor: Principal) -> None:
    """Approved ``skill_evolver:conflict``: the human chose the proposed skill over the existing
    one it contradicts, so the proposal is published and the existing skill retracted.
    (Rejecting keeps the existing skill and publishes nothing.)"""
    _publish_replacing(item, actor, _entry_ref(item.evidence["existing"]))


def _entry_ref(entry: dict) -> str:
    """The replaced skill's entry: a ``procedure`` fact, or a lesson-pool memory."""
    return entry.get("fact_id") or entry["memory_id"]


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
    org_skill_store(
        company=item.company,
        source=OrgSkill.Source.EVOLVER,
        fields=fields.model_dump(),
        advice=item.metadata["proposal"].get("advice"),
        fact_id=entry.fact_id,
        fact_version=entry.version,
        approval_item=item.pk,
        created_at=entry.timestamp,
    )
    if replaces and org_skill_retire(
        company=item.company,
        ref=replaces,
        actor=actor,
        approval_item_id=item.pk,
        replaced_by=str(entry.fact_id),
    ):
        logger.info(
            "ORG_SKILL_SUPERSEDED company=%s old=%s new=%s item=%s",
            item.company.slug,
            replaces,
            entry.fact_id,
            item.pk,
        )
    approval_consume(company=item.company, item_id=item.pk)
