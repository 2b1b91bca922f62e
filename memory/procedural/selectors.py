"""Reads of procedural learning, always scoped to the caller's company (and agent)."""

from __future__ import annotations

from django.db.models import QuerySet

from memory.procedural.models import ExecutionReport
from persistence.principal import Principal
from synthorg.errors import NotFoundError

REPORT_NOT_FOUND = "No execution report with this id is visible to the caller."


def execution_reports_visible_to(principal: Principal) -> QuerySet[ExecutionReport]:
    """An agent sees its own reports; a human member sees every report of the company."""
    qs = ExecutionReport.objects.filter(company=principal.company).select_related("capture")
    if principal.is_agent:
        qs = qs.filter(agent=principal.agent)
    return qs


def execution_report_get(*, principal: Principal, report_id) -> ExecutionReport:
    report = execution_reports_visible_to(principal).filter(pk=report_id).first()
    if report is None:
        raise NotFoundError(REPORT_NOT_FOUND, code="execution_report_not_found")
    return report


def recent_quality_scores(*, report: ExecutionReport, window: int) -> list[float]:
    """The agent's ``window`` most recent quality scores reported before ``report``."""
    return list(
        ExecutionReport.objects.filter(
            agent_id=report.agent_id,
            company_id=report.company_id,
            quality_score__isnull=False,
            created_at__lt=report.created_at,
        )
        .order_by("-created_at")
        .values_list("quality_score", flat=True)[:window]
    )
