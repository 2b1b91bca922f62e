"""Execution reports and compressed experiences in data portability and erasure (the
content registry).

Export includes an agent's reports (already redacted). Erasure *retains* them: the table is
append-only (the registry detects the trigger and reports the kind as retained), which is
why secrets and e-mail addresses are removed before a report is written. Reports are not
imported: they are the trajectory record of the company that ran the tasks.

Compressed experiences are exported with the agent's data and *erased* with it: a learning
may be the text of the agent's lesson (the extractive path), which erasure deletes too.

Lesson-pool org skills are the structured copy of a shared memory an agent's lesson became
(:class:`~memory.procedural.models.OrgSkill`, ``source`` lesson-pool). The skill row holds
no database link to its memory (archiving must not delete it), so erasure deletes it
explicitly: after an agent's or a subject's memories and archive rows are deleted, every
pool skill whose memory is neither live nor archived goes with them. They are exported for the
record; an import recreates the memory, not the approval that made it a skill.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Exists, OuterRef, Q

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.procedural.models import (
    CompressedExperience,
    ExecutionReport,
    ExecutionReportSubject,
    OrgSkill,
)
from persistence.content_registry import ContentKind, deleted_counts
from persistence.models import Agent, Company


def export_execution_reports(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    qs = ExecutionReport.objects.filter(company=company).select_related("agent", "subject_link")
    if agent is not None:
        qs = qs.filter(agent=agent)
    if subject is not None:
        qs = qs.filter(subject_link__subject=subject)
    for report in qs.order_by("created_at", "id").iterator(chunk_size=500):
        yield {
            "id": str(report.pk),
            "agent": report.agent.name,
            "task_id": report.task_id,
            "task_title": report.task_title,
            "task_type": report.task_type,
            "task_description": report.task_description,
            "outcome": report.outcome,
            "error_category": report.error_category,
            "error_message": report.error_message,
            "tool_calls": report.tool_calls,
            "retry_count": report.retry_count,
            "turn_count": report.turn_count,
            "quality_score": report.quality_score,
            "duration_ms": report.duration_ms,
            "recovery": report.recovery,
            "redactions": report.redactions,
            "subject": _subject(report),
            "created_at": report.created_at.isoformat(),
        }


def _subject(report: ExecutionReport) -> str | None:
    try:
        return report.subject_link.subject
    except ExecutionReportSubject.DoesNotExist:
        return None


EXECUTION_REPORTS = ContentKind(
    name="execution_report",
    label="execution reports",
    export=export_execution_reports,
    erase=None,  # append-only: retained
    order=90,
    table=ExecutionReport._meta.db_table,
    subjected=True,  # a subject's erasure reports them as retained (unlinked, below)
)


def export_report_subjects(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    """Which report served which end user (the report rows carry it too, as ``subject``)."""
    qs = ExecutionReportSubject.objects.filter(company=company).select_related("report__agent")
    if agent is not None:
        qs = qs.filter(report__agent=agent)
    if subject is not None:
        qs = qs.filter(subject=subject)
    for link in qs.order_by("report_id").iterator(chunk_size=500):
        yield {
            "id": str(link.report_id),
            "agent": link.report.agent.name,
            "report": str(link.report_id),
            "subject": link.subject,
        }


def erase_report_subjects(agent: Agent) -> int:
    return ExecutionReportSubject.objects.filter(report__agent=agent).delete()[0]


def erase_subject_report_links(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    """Unlink ``subject`` from the company's (or ``agent``'s) execution reports (the reports
    are append-only and kept, redacted as written) and delete the compressed experiences
    made of those reports' text."""
    links = ExecutionReportSubject.objects.filter(company=company, subject=subject)
    if agent is not None:
        links = links.filter(report__agent=agent)
    counts = deleted_counts(
        CompressedExperience.objects.filter(
            company=company, report_id__in=links.values("report_id")
        ).delete()
    )
    counts.update(deleted_counts(links.delete()))
    return counts


#: The link of a report to its end user: erased with the agent and with the subject.
EXECUTION_REPORT_SUBJECTS = ContentKind(
    name="execution_report_subject",
    label="execution report subjects",
    export=export_report_subjects,
    erase=erase_report_subjects,
    erase_subject=erase_subject_report_links,
    subjected=True,
    order=91,
    table=ExecutionReportSubject._meta.db_table,
)


def export_compressed_experiences(company: Company, agent: Agent | None) -> Iterator[dict]:
    qs = CompressedExperience.objects.filter(company=company).select_related("agent")
    if agent is not None:
        qs = qs.filter(agent=agent)
    for row in qs.order_by("created_at", "id").iterator(chunk_size=500):
        yield {
            "id": str(row.pk),
            "agent": row.agent.name,
            "report_id": str(row.report_id),
            "content": row.content,
            "raw_chars": row.raw_chars,
            "compression_ratio": row.compression_ratio,
            "compressor_version": row.compressor_version,
            "method": row.method,
            "model": row.model,
            "created_at": row.created_at.isoformat(),
        }


def erase_compressed_experiences(agent: Agent) -> int:
    return CompressedExperience.objects.filter(agent=agent).delete()[0]


COMPRESSED_EXPERIENCES = ContentKind(
    name="compressed_experience",
    label="compressed experiences",
    export=export_compressed_experiences,
    erase=erase_compressed_experiences,
    order=95,
    table=CompressedExperience._meta.db_table,
)


def _pool_skills(company: Company, agent: Agent | None = None):
    """The lesson-pool skills whose memory (live, or archived under its original id) is
    ``agent``'s (every agent's when None)."""
    live = Memory.objects.filter(company=company)
    archived = ArchivedMemory.objects.filter(company=company)
    if agent is not None:
        live, archived = live.filter(agent=agent), archived.filter(agent=agent)
    return OrgSkill.objects.filter(company=company, source=OrgSkill.Source.LESSON_POOL).filter(
        Q(memory_id__in=live.values("pk")) | Q(memory_id__in=archived.values("original_id"))
    )


def _orphaned_pool_skills(company: Company):
    """The lesson-pool skills whose memory is gone for good: neither live nor archived (an
    erasure deleted it; archiving keeps the skill for a restore)."""
    return OrgSkill.objects.filter(company=company, source=OrgSkill.Source.LESSON_POOL).exclude(
        Exists(Memory.objects.filter(pk=OuterRef("memory_id")))
        | Exists(ArchivedMemory.objects.filter(original_id=OuterRef("memory_id")))
    )


def export_org_skills(company: Company, agent: Agent | None) -> Iterator[dict]:
    for skill in _pool_skills(company, agent).order_by("created_at", "id").iterator(chunk_size=500):
        yield {
            "id": str(skill.pk),
            "memory_id": str(skill.memory_id),
            "name": skill.name,
            "discovery": skill.discovery,
            "condition": skill.condition,
            "action": skill.action,
            "rationale": skill.rationale,
            "steps": skill.steps,
            "confidence": skill.confidence,
            "application_count": skill.application_count,
            "created_at": skill.created_at.isoformat(),
        }


def erase_org_skills(agent: Agent) -> int:
    return _orphaned_pool_skills(agent.company).delete()[0]


def erase_subject_org_skills(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    return deleted_counts(_orphaned_pool_skills(company).delete())


#: after the memories (10, 11) and the archive (20): what their erasure deleted for good
#: leaves its skill orphaned, and the orphans go
ORG_SKILLS = ContentKind(
    name="org_skill",
    label="org skills",
    export=export_org_skills,
    erase=erase_org_skills,
    erase_subject=erase_subject_org_skills,
    order=21,
    table=OrgSkill._meta.db_table,
)
