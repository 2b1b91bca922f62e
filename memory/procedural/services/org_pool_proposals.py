"""Proposing a lesson to the org skill pool: the only thing an ``org``-scoped lesson does
beyond its author's reach.

An agent never writes the org pool. Its ``org`` lesson becomes an ApprovalItem in the human
approval queue (the skill evolver's path): ``procedural_lesson:org_pool`` (risk medium), or
``procedural_lesson:org_pool_conflict`` (risk high, both texts) when it contradicts a live
org skill. Supersession is judged as the evolver judges it
(:mod:`memory.procedural.evolver.supersession`), against every live org skill whoever
proposed it (:func:`memory.procedural.evolver.services.existing_skills`): a FULL match names
the skill the lesson would replace once approved. Its advice is checked against the live
lessons, org skills and core policies as the evolver's is
(:mod:`memory.procedural.contradictions`): one it contradicts makes the verdict
``CONTRADICTS``, each listed in the evidence. :mod:`memory.procedural.services.org_pool`
applies an approval.
"""

from __future__ import annotations

from datetime import datetime

from memory.procedural.advice import Advice
from memory.procedural.contradictions import advising_entries, contradicted_by, lesson_advice
from memory.procedural.domain import ProceduralMemoryProposal
from memory.procedural.evolver import skill_text
from memory.procedural.evolver.presentation import skill_presenter
from memory.procedural.evolver.services import existing_skills
from memory.procedural.evolver.supersession import Skill, Verdict, judge
from memory.procedural.models import ProceduralLesson
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_request
from persistence.models import Agent

ACTION_ORG_POOL = "procedural_lesson:org_pool"
ACTION_ORG_POOL_CONFLICT = "procedural_lesson:org_pool_conflict"
SOURCE = "procedural_learning"
#: how the inbox presents these items (registered in ``ProceduralConfig.ready``): the
#: evolver's skill presentation — same tiers, limits, verdicts and 7-day TTL
LESSON_PRESENTER = skill_presenter(
    approve_hint=(
        "Approving adds the lesson to the org skill pool, by the system on your behalf, with "
        "the text below as you leave it (your edits are recorded as a diff)."
    )
)


def org_pool_propose(
    *,
    agent: Agent,
    lesson: ProceduralLesson,
    proposal: ProceduralMemoryProposal,
    now: datetime,
) -> ApprovalItem:
    """Queue ``lesson`` (the author's own, just stored) for a human decision on entering the
    org skill pool; the item id is kept on the lesson (``org_approval_item``). Call inside
    the storing transaction."""
    judgement = judge(
        Skill(condition=proposal.condition, action=proposal.action, confidence=proposal.confidence),
        existing_skills(agent.company),
    )
    advice = Advice.from_dict(proposal.advice) or lesson_advice(lesson)
    contradicts = [
        entry
        for entry in contradicted_by(
            advice, advising_entries(company=agent.company, about=advice, now=now)
        )
        if entry["ref"] != str(lesson.memory_id)
    ]
    tiers = proposal.model_dump(mode="json")
    tiers["content"] = skill_text.render(tiers)
    evidence = {
        "lesson_memory_id": str(lesson.memory_id),
        "report_ids": [str(lesson.report_id)] if lesson.report_id else [],
        "agent_id": agent.pk,
        "agents": [agent.name],
        "confidence": proposal.confidence,
        "requested_scope": "org",
        "method": lesson.method,
        "verdict": judgement.verdict.value,
        "condition_jaccard": round(judgement.condition_jaccard, 4),
        "action_jaccard": round(judgement.action_jaccard, 4),
        "condition_coverage": round(judgement.condition_coverage, 4),
        "contradicts": contradicts,
    }
    metadata = {"proposal": tiers, "lesson_memory_id": str(lesson.memory_id), "scope": "org"}
    existing = judgement.existing
    if judgement.verdict is Verdict.CONFLICT:
        evidence["existing"] = existing.as_entry()
        item = approval_request(
            company=agent.company,
            action_type=ACTION_ORG_POOL_CONFLICT,
            title=f"Conflicting org skill from {agent.name}: {proposal.discovery}"[:200],
            description=(
                "An agent proposed a lesson for the org skill pool whose action contradicts a "
                "live pool entry for the same situation. Approve to add the proposed lesson "
                "and supersede the existing entry; reject to keep the existing entry."
            ),
            risk_level=ApprovalItem.RiskLevel.HIGH,
            source=SOURCE,
            requester_agent=agent,
            evidence=evidence,
            metadata=metadata,
            now=now,
        )
    else:
        if judgement.verdict is Verdict.FULL:
            evidence["superseded"] = existing.as_entry()
        description = (
            f"{agent.name} proposed this lesson for the whole company "
            f"(confidence {proposal.confidence:.2f}, verdict {judgement.verdict.value}). "
            "Approve to add it to the org skill pool."
        )
        if contradicts:
            evidence["verdict"] = Verdict.CONTRADICTS.value
            description += (
                f" It contradicts {len(contradicts)} live "
                f"{'entry' if len(contradicts) == 1 else 'entries'} (listed side by side): "
                "approving adds it, and in every agent's context an org skill then wins over "
                "a contradicting lesson."
            )
        item = approval_request(
            company=agent.company,
            action_type=ACTION_ORG_POOL,
            title=f"Org skill from {agent.name}: {proposal.discovery}"[:200],
            description=description,
            risk_level=ApprovalItem.RiskLevel.MEDIUM,
            source=SOURCE,
            requester_agent=agent,
            evidence=evidence,
            metadata=metadata,
            now=now,
        )
    ProceduralLesson.objects.filter(pk=lesson.pk).update(org_approval_item=item.pk)
    lesson.org_approval_item = item.pk
    return item
