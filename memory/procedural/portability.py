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

from memory.procedural.models import CompressedExperience, ExecutionReport
from persistence.content_registry import ContentKind
from persistence.models import Agent, Company


def export_execution_reports(company: Company, agent: Agent | None) -> Iterator[dict]:
    qs = ExecutionReport.objects.filter(company=company).select_related("agent")
    if agent is not None:
        qs = qs.filter(agent=agent)
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
            "created_at": report.created_at.isoformat(),
        }


EXECUTION_REPORTS = ContentKind(
    name="execution_report",
    label="execution reports",
    export=export_execution_reports,
    erase=None,  # append-only: retained
    order=90,
    table=ExecutionReport._meta.db_table,
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
