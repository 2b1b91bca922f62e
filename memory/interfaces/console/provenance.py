"""What the console shows about where a memory came from and how it was changed.

Provenance joins the rows that produced a memory: the execution report behind a lesson, the
extraction run (and its conversation) behind an extracted fact, and the supersession links
either way (what replaced this memory, what it replaced), each a link to that memory's page:
a private memory's under its agent, a shared one's (the org skill pool's) under shared. The
correction history is the audit's ``memory.corrected`` entries (who, when, why and a SHA-256
of the text replaced: the audit survives an erasure, so it never holds the text) with the
replaced text from the memory's :class:`~memory.core.models.MemoryRevision` rows, which are
deleted with the memory (``memory_correct``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from memory.core.models.memory import Memory
from memory.core.models.revision import MemoryRevision
from memory.ingestion.models import ExtractedFact
from memory.procedural.models import ProceduralLesson
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry


@dataclass(frozen=True)
class Link:
    id: str
    url: str
    label: str


@dataclass(frozen=True)
class Provenance:
    lesson: ProceduralLesson | None
    extracted: list[ExtractedFact]
    superseded_by: Link | None = None
    supersedes: list[Link] = field(default_factory=list)
    propagated_from: Link | None = None


def memory_link(memory: Memory) -> Link:
    """The console page of ``memory``: shared entries under shared, private ones under their
    agent."""
    if memory.is_shared:
        url = reverse("memory_console:shared-memory", args=[memory.pk])
    else:
        url = reverse("memory_console:memory", args=[memory.agent_id, memory.pk])
    label = memory.content if len(memory.content) <= 80 else memory.content[:79] + "…"
    return Link(id=str(memory.pk), url=url, label=label)


def memory_provenance(memory: Memory) -> Provenance:
    lesson = (
        ProceduralLesson.objects.select_related("report", "propagated_from")
        .filter(memory=memory)
        .first()
    )
    extracted = list(
        ExtractedFact.objects.filter(memory_id=memory.pk, run__company_id=memory.company_id)
        .select_related("run__conversation")
        .order_by("run__created_at", "position")
    )
    same_company = Memory.objects.filter(company_id=memory.company_id)
    newer = same_company.filter(pk=memory.superseded_by_id).first()
    older = same_company.filter(superseded_by_id=memory.pk).order_by("superseded_at", "id")
    source = lesson.propagated_from if lesson is not None else None
    return Provenance(
        lesson=lesson,
        extracted=extracted,
        superseded_by=memory_link(newer) if newer is not None else None,
        supersedes=[memory_link(m) for m in older],
        propagated_from=memory_link(source) if source is not None else None,
    )


@dataclass(frozen=True)
class Correction:
    entry: AuditEntry
    #: the text the correction replaced (``None``: corrected before texts were kept)
    previous_content: str | None


def memory_corrections(memory: Memory) -> list[Correction]:
    """The memory's corrections, oldest first (over the ``audit_target`` index), each with
    the text it replaced."""
    entries = list(
        AuditEntry.objects.filter(
            company_id=memory.company_id,
            target_type="memory",
            target_id=str(memory.pk),
            action_type=AuditAction.MEMORY_CORRECTED,
        )
        .select_related("actor_user")
        .order_by("created_at", "id")
    )
    texts = dict(
        MemoryRevision.objects.filter(memory=memory).values_list(
            "audit_entry_id", "previous_content"
        )
    )
    return [Correction(entry, texts.get(entry.pk)) for entry in entries]
