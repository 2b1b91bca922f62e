"""A lesson through the archive: what its archive row keeps, and what a restore gives back.

Whichever step archives a PROCEDURAL memory — pruning, the per-agent caps, retention, expiry,
consolidation — the core writes its archive row through
:func:`memory.core.services.archive.archive_memories`, which asks :func:`lesson_snapshot`
(registered with ``on_archiving``) what to keep: under ``metadata["procedural"]`` the
memory's delivered scope and application counters and, when it has one, its lesson (tiers,
advice, method, provenance). ``POST /archive/{id}/restore`` then calls
:func:`lesson_restore` (registered with ``on_archive_restored``), which puts all of it back
on the restored memory. An org-pool entry's org skill
(:class:`~memory.procedural.models.OrgSkill`) stays in the store while its memory is archived
(not live: :func:`memory.procedural.skills.org_skill_live_q`); the snapshot names it and the
restore points it at the restored memory, so the skill, its id and its counters come back.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.core.models.memory import Memory
from memory.procedural.models import Method, OrgSkill, ProceduralLesson
from memory.procedural.selectors import attach_lessons, lesson_of
from persistence.models import Company

SNAPSHOT_KEY = "procedural"


def _lesson_metadata(memory: Memory) -> dict:
    data = {
        "scope": memory.scope,
        "application_count": memory.application_count,
        "last_applied_at": memory.last_applied_at.isoformat() if memory.last_applied_at else None,
    }
    lesson = lesson_of(memory)
    if lesson is not None:
        data["lesson"] = {
            "report_id": str(lesson.report_id) if lesson.report_id else None,
            "origin": lesson.origin,
            "propagated_from": str(lesson.propagated_from_id)
            if lesson.propagated_from_id
            else None,
            "skill_name": lesson.skill_name,
            "discovery": lesson.discovery,
            "condition": lesson.condition,
            "action": lesson.action,
            "rationale": lesson.rationale,
            "execution_steps": lesson.execution_steps,
            "advice": lesson.advice,
            "method": lesson.method,
            "proposer_model": lesson.proposer_model,
            "requested_scope": lesson.requested_scope,
            "org_approval_item": str(lesson.org_approval_item)
            if lesson.org_approval_item
            else None,
            "created_at": lesson.created_at.isoformat(),
        }
    return data


def lesson_snapshot(memories: Sequence[Memory]) -> dict:
    """What the archive rows of ``memories`` keep of the PROCEDURAL ones (an
    ``on_archiving`` snapshot of the core; one query for their lessons)."""
    procedural = [m for m in memories if m.category == "procedural"]
    attach_lessons(procedural)
    snapshots = {m.pk: {SNAPSHOT_KEY: _lesson_metadata(m)} for m in procedural}
    skills = OrgSkill.objects.filter(memory_id__in=list(snapshots)).values_list("memory_id", "pk")
    for memory_id, skill_id in skills:
        snapshots[memory_id][SNAPSHOT_KEY]["org_skill"] = str(skill_id)
    return snapshots


def lesson_restore(*, memory_id, company: Company, metadata: dict) -> ProceduralLesson | None:
    """Give a memory restored from the archive back its lesson and skill-pool counters
    (an ``on_archive_restored`` handler of the core; a no-op for archive rows without
    procedural metadata)."""
    data = metadata.get(SNAPSHOT_KEY)
    if not data:
        return None
    scope = data.get("scope") or ""
    # Archived before scopes were delivered, a private lesson may carry the scope "org" its
    # proposer asked for; only shared org-pool entries hold it now (memory_org_scope_is_shared).
    if scope == "org" and not Memory.objects.filter(pk=memory_id, is_shared=True).exists():
        scope = "agent"
    Memory.objects.filter(pk=memory_id).update(
        scope=scope,
        application_count=data.get("application_count") or 0,
        last_applied_at=data.get("last_applied_at"),
    )
    if data.get("org_skill"):
        OrgSkill.objects.filter(
            company=company, pk=data["org_skill"], memory_id__isnull=False
        ).update(memory_id=memory_id)
    lesson = data.get("lesson")
    if not lesson:
        return None
    return ProceduralLesson.objects.create(
        memory_id=memory_id,
        company=company,
        report_id=lesson["report_id"],
        origin=lesson["origin"],
        propagated_from_id=Memory.objects.filter(pk=lesson["propagated_from"])
        .values_list("pk", flat=True)
        .first()
        if lesson["propagated_from"]
        else None,
        skill_name=lesson["skill_name"],
        discovery=lesson["discovery"],
        condition=lesson["condition"],
        action=lesson["action"],
        rationale=lesson["rationale"],
        execution_steps=lesson["execution_steps"],
        # Rows archived before advice and method were kept: {} and llm, the columns' defaults.
        advice=lesson.get("advice") or {},
        method=lesson.get("method") or Method.LLM,
        proposer_model=lesson["proposer_model"],
        requested_scope=lesson.get("requested_scope", data.get("scope") or ""),
        org_approval_item=lesson.get("org_approval_item"),
        created_at=lesson["created_at"],
    )
