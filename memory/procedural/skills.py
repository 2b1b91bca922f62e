"""The org skill store (issue 34 item 4): every approved org-wide skill in one table,
:class:`~memory.procedural.models.OrgSkill`, whoever proposed it.

* :func:`org_skill_store` is the one write. Each approval applier calls it in its deciding
  transaction after publishing the entry agents retrieve: the skill evolver's
  (:mod:`memory.procedural.evolver.apply`, a ``procedure`` fact) and the lesson pool's
  (:mod:`memory.procedural.services.org_pool`, a shared PROCEDURAL memory); a person's skill
  is stored by :mod:`memory.procedural.services.operator_skills` beside the ``procedure``
  fact it publishes. The structure is stored as the approver left it (or the person filled
  it in), never parsed back out of the entry's text.
* :func:`org_skills` is the one read: the company's live skills of every source (what the
  evolver and the lesson pool judge a proposal against, what the contradiction check and the
  context assembly read a skill's advice from, what the API and console list).
* :func:`org_skill_retire` takes a skill out of the org when an approval replaces it: its
  fact is retracted, or its memory superseded — whichever store it was published in.

A skill's id is its entry's id when stored (the fact's or the memory's). A lesson-pool skill
keeps its row, id and counters through an archive round trip of its memory: archiving
deletes the memory row, never the skill (``memory`` is not cascaded), and the restore points
the skill at the restored memory (:mod:`memory.procedural.services.lesson_archive`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.core.models.memory import Memory, live_q
from memory.procedural.models import OrgSkill
from orgmemory.models import OrgFact
from orgmemory.services.facts import fact_retract_approved
from persistence.models import Company
from persistence.principal import Principal

#: the structure every writer hands over (``SkillFields.model_dump()``)
SKILL_FIELDS = (
    "name",
    "discovery",
    "condition",
    "action",
    "rationale",
    "steps",
    "confidence",
    "pattern",
    "report_count",
    "agent_count",
)


def org_skill_store(
    *,
    company: Company,
    source: str,
    fields: Mapping[str, Any],
    created_at: datetime,
    approval_item=None,
    advice: Mapping[str, Any] | None = None,
    fact_id=None,
    fact_version: int | None = None,
    memory_id=None,
) -> OrgSkill:
    """Store one approved skill (``fields``: its validated structure) beside its entry:
    ``fact_id`` (and the ``fact_version`` the structure describes) or ``memory_id``."""
    entry_id = fact_id if fact_id is not None else memory_id
    return OrgSkill.objects.create(
        id=entry_id,
        company=company,
        source=source,
        fact_id=fact_id,
        fact_version=fact_version,
        memory_id=memory_id,
        approval_item=approval_item,
        advice=dict(advice or {}),
        created_at=created_at,
        **{key: fields[key] for key in SKILL_FIELDS if key in fields},
    )


def org_skill_live_q(now: datetime | None = None) -> Q:
    """A skill is live while its fact is not retracted, or its memory is live (not archived,
    expired or superseded)."""
    now = now or timezone.now()
    live_memory = Exists(Memory.objects.filter(live_q(now), pk=OuterRef("memory_id")))
    return Q(fact__isnull=False, fact__retracted_at__isnull=True) | (
        Q(memory__isnull=False) & Q(live_memory)
    )


def org_skills(
    *, company: Company | int, include_retracted: bool = False, now: datetime | None = None
) -> QuerySet[OrgSkill]:
    """The company's (a company or its id) approved org skills of every source (structured,
    with counters), newest first; only the live ones unless ``include_retracted``. Each row
    carries ``retired_at``: its fact's retraction or its memory's supersession."""
    superseded = Memory.objects.filter(pk=OuterRef("memory_id")).values("superseded_at")[:1]
    rows = (
        OrgSkill.objects.filter(company=company)
        .select_related("fact")
        .annotate(retired_at=Coalesce("fact__retracted_at", Subquery(superseded)))
    )
    if not include_retracted:
        rows = rows.filter(org_skill_live_q(now))
    return rows.order_by("-created_at", "-id")


def org_skill_retire(
    *,
    company: Company,
    ref: str,
    actor: Principal,
    approval_item_id,
    replaced_by: str,
    replaced_by_memory=None,
    now: datetime | None = None,
) -> bool:
    """Take the entry ``ref`` (a ``procedure`` fact's id, or a lesson-pool memory's) out of
    the org because the approval ``approval_item_id`` replaced it with ``replaced_by``: a
    fact is retracted on the approver's behalf, a memory superseded (by
    ``replaced_by_memory`` when the replacement is a memory too). False when it already was."""
    now = now or timezone.now()
    if OrgFact.objects.filter(company=company, fact_id=ref).exists():
        if not OrgFact.objects.filter(
            company=company, fact_id=ref, retracted_at__isnull=True
        ).exists():
            return False
        fact_retract_approved(
            company=company,
            approver=actor,
            approval_item_id=approval_item_id,
            fact_id=ref,
            reason=f"superseded by {replaced_by} (approval {approval_item_id})",
        )
        return True
    return bool(
        Memory.objects.filter(company=company, pk=ref, superseded_at__isnull=True).update(
            superseded_at=now, superseded_by_id=replaced_by_memory, updated_at=now
        )
    )
