"""Storing accepted proposals as PROCEDURAL memories, propagating them, writing SKILL.md.

A lesson is one memory row (its content is the discovery tier, which is what gets embedded
and ranked) plus a :class:`ProceduralLesson` row holding the activation and execution
tiers and the report it came from. Lessons are stored at the persistent level whatever the
agent's level (they are long-term knowledge); an agent at level ``none`` stores nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest, normalise_tags
from memory.core.models.memory import Memory
from memory.core.retrieval.filtering import NON_INFERABLE_TAG
from memory.core.services.events import agent_names, memory_snapshot
from memory.core.services.store import memory_store, memory_store_batch
from memory.procedural.domain import ProceduralMemoryProposal, skill_name
from memory.procedural.models import ExecutionReport, ProceduralLesson
from memory.procedural.propagation import (
    Peer,
    ScopeDecision,
    propagation_targets,
    scope_decision,
)
from memory.procedural.services.org_pool_proposals import org_pool_propose
from memory.procedural.skill_md import SkillPathError, render_skill_md, write_skill_md
from orgmemory.services.webhooks import event_envelope, webhook_events_record, webhook_for_event
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory
from synthorg.tenancy import TenantPathError, tenant_path

logger = logging.getLogger(__name__)

SUCCESS_DERIVED_TAG = "success-derived"
PROPAGATED_TAG = "propagated:{agent_id}"
LESSON_CREATED = "lesson.created"
RESERVED_TAGS = 4  # non-inferable, success-derived, propagated:…, slack


@dataclass(frozen=True)
class StoredLesson:
    memory_id: object | None  # None: the agent's memory level is none
    deduplicated: bool
    lesson: ProceduralLesson | None
    propagated_to: tuple[int, ...] = ()
    scope_note: str = ""  # a narrowed scope or an org proposal, said in words
    org_item: object | None = None  # the org skill pool proposal (an ApprovalItem)


def lesson_tags(proposal: ProceduralMemoryProposal, *, extra: list[str]) -> tuple[str, ...]:
    tags = [NON_INFERABLE_TAG, *extra]
    for tag in proposal.tags:
        try:
            tags.extend(normalise_tags([tag]))
        except ValueError:
            continue
    return normalise_tags(tags[:32])


def _unique_skill_name(proposal: ProceduralMemoryProposal, memory_id) -> str:
    base = skill_name(proposal.name or proposal.discovery)[:55].rstrip("-") or "lesson"
    return f"{base}-{str(memory_id)[:8]}"


def lesson_row_create(
    *,
    memory_id,
    company,
    report: ExecutionReport | None,
    origin: str,
    proposal: ProceduralMemoryProposal,
    model: str,
    now: datetime,
    scope: str,
    requested_scope: str,
    propagated_from_id=None,
    method: str = "llm",
    org_approval_item=None,
) -> ProceduralLesson:
    Memory.objects.filter(pk=memory_id).update(scope=scope)
    lesson = ProceduralLesson.objects.create(
        memory_id=memory_id,
        company=company,
        report=report,
        origin=origin,
        propagated_from_id=propagated_from_id,
        skill_name=_unique_skill_name(proposal, memory_id),
        discovery=proposal.discovery,
        condition=proposal.condition,
        action=proposal.action,
        rationale=proposal.rationale,
        execution_steps=list(proposal.execution_steps),
        advice=dict(proposal.advice or {}),
        proposer_model=model,
        method=method,
        requested_scope=requested_scope,
        org_approval_item=org_approval_item,
        created_at=now,
    )
    lesson_event_record(lesson, now=now)
    return lesson


def lesson_event_record(lesson: ProceduralLesson, *, now: datetime) -> None:
    """``lesson.created`` for the company's webhook (in the caller's transaction, sent on
    commit): the lesson's provenance and its memory; its tiers and skill name (text the
    proposer wrote from the agent's work) only when the company opted in to content. Its
    memory was announced as ``memory.created`` by the store."""
    webhook = webhook_for_event(company_id=lesson.company_id, event=LESSON_CREATED)
    if webhook is None:
        return
    memory = Memory.objects.get(pk=lesson.memory_id)
    name = agent_names([memory.agent_id]).get(memory.agent_id, "")
    body = {
        "id": str(lesson.memory_id),
        "origin": lesson.origin,
        "method": lesson.method,
        "scope": memory.scope,
        "requested_scope": lesson.requested_scope,
        "report_id": str(lesson.report_id) if lesson.report_id is not None else None,
        "propagated_from": (
            str(lesson.propagated_from_id) if lesson.propagated_from_id is not None else None
        ),
        "created_at": lesson.created_at.isoformat(),
    }
    if webhook.include_content:
        body.update(
            skill_name=lesson.skill_name,
            discovery=lesson.discovery,
            condition=lesson.condition,
            action=lesson.action,
            rationale=lesson.rationale,
            execution_steps=list(lesson.execution_steps),
        )
    payload = event_envelope(
        company=webhook.company,
        event=LESSON_CREATED,
        occurred_at=now,
        lesson=body,
        memory=memory_snapshot(memory, agent_name=name, include_content=webhook.include_content),
    )
    webhook_events_record(webhook=webhook, event=LESSON_CREATED, payloads=[payload], now=now)


def lesson_scope(company, requested: str) -> ScopeDecision:
    """How far a lesson of ``company`` asking for ``requested`` goes (see
    :func:`~memory.procedural.propagation.scope_decision`)."""
    config = company_config(company)
    return scope_decision(
        requested,
        config.memory.procedural.propagation.strategy,
        org_pool=config.memory.options.shared_knowledge_base,
    )


@transaction.atomic
def procedural_lesson_store(
    *,
    agent: Agent,
    report: ExecutionReport,
    proposal: ProceduralMemoryProposal,
    origin: str,
    model: str = "",
    method: str = "llm",
    supersedes: tuple = (),
    now: datetime | None = None,
) -> StoredLesson:
    """Store ``proposal`` as a PROCEDURAL memory of ``agent``, deliver it as far as its
    ``scope`` and the company's propagation strategy allow (:func:`lesson_scope`: a copy for
    each peer of the effective role/department; an ``org`` lesson also becomes a proposal to
    the org skill pool, :func:`org_pool_propose`) and write its SKILL.md (when
    ``skill_md_directory`` is set; a file-system error is logged, the lesson stays).

    ``method`` is ``llm`` or ``rule`` (:mod:`memory.procedural.rule_lessons`);
    ``supersedes`` names memories the new lesson replaces through the write gate (an LLM
    lesson replacing the rule lesson of the same report: kept, marked superseded)."""
    now = now or timezone.now()
    extra = [SUCCESS_DERIVED_TAG] if origin == ProceduralLesson.Origin.SUCCESS else []
    request = MemoryStoreRequest(
        content=proposal.discovery,
        category=MemoryCategory.PROCEDURAL,
        source=f"execution-report:{report.pk}",
        confidence=proposal.confidence,
        tags=lesson_tags(proposal, extra=extra),
        supersedes=tuple(supersedes),
    )
    result = memory_store(agent=agent, request=request, now=now, persistent=True)
    if not result.stored:
        return StoredLesson(memory_id=None, deduplicated=False, lesson=None)
    if result.deduplicated:
        # A recurring failure: the agent already holds this lesson. Keep the first one.
        return StoredLesson(memory_id=result.id, deduplicated=True, lesson=None)
    decision = lesson_scope(agent.company, proposal.scope.value)
    lesson = lesson_row_create(
        memory_id=result.id,
        company=agent.company,
        report=report,
        origin=origin,
        proposal=proposal,
        model=model,
        now=now,
        method=method,
        scope=decision.effective,
        requested_scope=decision.requested,
    )
    propagated = _propagate(
        agent=agent,
        report=report,
        proposal=proposal,
        lesson=lesson,
        scope=decision.effective,
        now=now,
        supersedes=tuple(supersedes),
    )
    item = None
    if decision.org_proposal:
        item = org_pool_propose(agent=agent, lesson=lesson, proposal=proposal, now=now)
    _materialise_skill_md(lesson=lesson, agent=agent, proposal=proposal)
    return StoredLesson(
        memory_id=result.id,
        deduplicated=False,
        lesson=lesson,
        propagated_to=propagated,
        scope_note=decision.note,
        org_item=item,
    )


def _propagate(*, agent, report, proposal, lesson, scope, now, supersedes=()) -> tuple[int, ...]:
    """Copy the lesson to the peers of its effective ``scope`` (``role`` / ``department``;
    ``agent``: nobody). A peer's live copy of a lesson this one ``supersedes`` (the rule
    lesson an LLM lesson replaces) is superseded by its new copy, as the source's own is;
    a copy the new lesson does not reach (its scope is narrower) is superseded by the new
    lesson itself: kept and restorable, but out of retrieval like its source."""
    received = _deliver(
        agent=agent,
        report=report,
        proposal=proposal,
        lesson=lesson,
        scope=scope,
        now=now,
        supersedes=supersedes,
    )
    if supersedes:
        stale = ProceduralLesson.objects.filter(
            propagated_from_id__in=supersedes, memory__superseded_at__isnull=True
        ).values_list("memory_id", flat=True)
        Memory.objects.filter(pk__in=list(stale)).update(
            superseded_at=now, superseded_by_id=lesson.memory_id, updated_at=now
        )
    return received


def _deliver(*, agent, report, proposal, lesson, scope, now, supersedes) -> tuple[int, ...]:
    config = company_config(agent.company).memory.procedural.propagation
    if scope == "agent":
        return ()
    field = scope
    candidates = Agent.objects.filter(company_id=agent.company_id, is_active=True).filter(
        **{field: getattr(agent, field)}
    )
    peers = propagation_targets(
        scope,
        source=_peer(agent),
        candidates=[_peer(a) for a in candidates.exclude(pk=agent.pk)],
        max_targets=config.max_propagation_targets,
    )
    by_id = {a.pk: a for a in candidates.filter(pk__in=[p.id for p in peers])}
    tags = lesson_tags(proposal, extra=[PROPAGATED_TAG.format(agent_id=agent.pk)])
    old_copies: dict[int, list] = {}
    if supersedes:
        for peer_id, memory_id in ProceduralLesson.objects.filter(
            propagated_from_id__in=supersedes,
            memory__agent_id__in=list(by_id),
            memory__superseded_at__isnull=True,
        ).values_list("memory__agent_id", "memory_id"):
            old_copies.setdefault(peer_id, []).append(memory_id)
    received = []
    for peer in peers:
        request = MemoryStoreRequest(
            content=proposal.discovery,
            category=MemoryCategory.PROCEDURAL,
            source=f"execution-report:{report.pk}",
            confidence=proposal.confidence,
            tags=tags,
            supersedes=tuple(old_copies.get(peer.id, ())),
        )
        [result] = memory_store_batch(
            agent=by_id[peer.id], requests=[request], now=now, persistent=True
        )
        if not result.stored or result.deduplicated:
            continue
        lesson_row_create(
            memory_id=result.id,
            company=agent.company,
            report=report,
            origin=ProceduralLesson.Origin.PROPAGATED,
            proposal=proposal,
            model=lesson.proposer_model,
            now=now,
            propagated_from_id=lesson.memory_id,
            method=lesson.method,
            scope=scope,
            requested_scope=lesson.requested_scope,
        )
        received.append(peer.id)
    return tuple(received)


def _peer(agent: Agent) -> Peer:
    return Peer(
        id=agent.pk,
        role=agent.role,
        department=agent.department,
        memory_level=agent.memory_level,
        is_active=agent.is_active,
    )


def skill_md_directory(configured: str, company_id: int) -> Path:
    """``skill_md_directory`` resolved under the company's directory on the server
    (``SYNTHORG_TENANT_FILES_DIR/<company id>/``); :class:`TenantPathError` if it would leave
    it."""
    return tenant_path(company_id, configured)


def lesson_skill_md(lesson: ProceduralLesson) -> str:
    """The SKILL.md text of ``lesson`` (also served by ``GET /memories/{id}/skill.md``)."""
    metadata = {"memory_id": str(lesson.memory_id), "origin": lesson.origin}
    if lesson.report_id:
        metadata["execution_report"] = str(lesson.report_id)
    return render_skill_md(
        name=lesson.skill_name,
        description=lesson.discovery,
        condition=lesson.condition,
        action=lesson.action,
        rationale=lesson.rationale,
        steps=lesson.execution_steps,
        metadata=metadata,
    )


def _materialise_skill_md(*, lesson: ProceduralLesson, agent: Agent, proposal) -> None:
    configured = company_config(agent.company).memory.procedural.skill_md_directory
    if not configured:
        return
    text = lesson_skill_md(lesson)
    slug = agent.company.slug

    def write() -> None:
        directory = configured
        try:
            directory = skill_md_directory(configured, agent.company_id)
            write_skill_md(directory, slug, lesson.skill_name, text)
        except (OSError, SkillPathError, TenantPathError):
            logger.warning(
                "could not write SKILL.md of lesson %s under %s",
                lesson.pk,
                directory,
                exc_info=True,
            )

    # Only once the lesson is committed: a rolled-back lesson leaves no file behind.
    transaction.on_commit(write)
