"""Execution reports and compressed experiences in data portability and erasure (the
content registry).

Export includes an agent's reports (already redacted). Erasure *retains* them: the table is
append-only (the registry detects the trigger and reports the kind as retained), which is
why secrets and e-mail addresses are removed before a report is written. Reports are not
imported: they are the trajectory record of the company that ran the tasks.

Compressed experiences are exported with the agent's data and *erased* with it: a learning
may be the text of the agent's lesson (the extractive path), which erasure deletes too.
"""

from __future__ import annotations

from collections.abc import Iterator

from memory.procedural.models import CompressedExperience, ExecutionReport, ExecutionReportSubject
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
