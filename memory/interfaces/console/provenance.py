"""What the console shows about where a memory came from and how it was changed.

Provenance joins the rows that produced a memory: the execution report behind a lesson, the
extraction run (and its conversation) behind an extracted fact. The correction history is
the audit's ``memory.corrected`` entries: who, when, why and a SHA-256 of the text replaced —
never the text itself, since the audit survives an erasure (``memory_correct``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.core.models.memory import Memory
from memory.ingestion.models import ExtractedFact
from memory.procedural.models import ProceduralLesson
from persistence.models import AuditEntry


@dataclass(frozen=True)
class Provenance:
    lesson: ProceduralLesson | None
    extracted: list[ExtractedFact]


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
    return Provenance(lesson=lesson, extracted=extracted)


def memory_corrections(memory: Memory) -> list[AuditEntry]:
    """The memory's corrections, oldest first (over the ``audit_target`` index)."""
    return list(
        AuditEntry.objects.filter(
            company_id=memory.company_id,
            target_type="memory",
            target_id=str(memory.pk),
            action_type="memory.corrected",
        )
        .select_related("actor_user")
        .order_by("created_at", "id")
    )
