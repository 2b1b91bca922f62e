"""Execution reports in data portability and erasure (the content registry).

Export includes an agent's reports (already redacted). Erasure *retains* them: the table is
append-only (the registry detects the trigger and reports the kind as retained), which is
why secrets and e-mail addresses are removed before a report is written. Reports are not
imported: they are the trajectory record of the company that ran the tasks.
"""

from __future__ import annotations

from collections.abc import Iterator

from memory.procedural.models import ExecutionReport
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
