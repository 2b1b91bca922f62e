"""Submitting execution reports: validate, redact, store (append-only), queue the capture.

:func:`execution_report_submit` is the one write path for reports (REST, MCP tools and
commands call it). The report is redacted **before** it is stored: the table is append-only,
so a secret that got in could never be removed again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from memory.procedural.capture import initial_capture_status
from memory.procedural.domain import ExecutionReportInput
from memory.procedural.models import ExecutionCapture, ExecutionReport, ExecutionReportSubject
from memory.procedural.services.history import capture_history_record
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Task
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.errors import InvalidInputError, NotFoundError
from synthorg.redaction import redactor_for
from synthorg.schedules import LLM_CLUSTER

logger = logging.getLogger(__name__)

TASK_NOT_FOUND = "No task with this id exists in the caller's company."
CAPTURE_TASK = "memory.procedural.tasks.capture_execution_report"
#: How long a queued capture waits for its own task before the dispatcher takes it as lost
#: and runs it: the kernel's wake (:data:`synthorg.jobs.registry.WAKE_SCHEDULES`) runs a
#: stranded capture within this grace plus the wake's interval. Long enough for a live
#: cluster to take the task it was handed (it polls the broker many times a second).
LOST_TASK_GRACE = timedelta(seconds=20)


@dataclass(frozen=True)
class SubmittedReport:
    report: ExecutionReport
    capture: str  # queued | disabled | not_applicable


def parse_report_input(data: Mapping[str, Any] | ExecutionReportInput) -> ExecutionReportInput:
    """``data`` as a validated report; a 400 naming every bad field otherwise."""
    if isinstance(data, ExecutionReportInput):
        return data
    try:
        return ExecutionReportInput.model_validate(dict(data))
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or None
            message = error["msg"].removeprefix("Value error, ")
            code = "unknown_field" if error["type"] == "extra_forbidden" else error["type"]
            if field == "subject" and error["type"] == "value_error":
                code = "subject_invalid"
            errors.append({"field": field, "message": message, "code": code})
        first = errors[0]
        where = f"{first['field']}: " if first["field"] else ""
        raise InvalidInputError(
            f"{where}{first['message']}", code="validation_error", errors=errors
        ) from None


@transaction.atomic
def execution_report_submit(
    *,
    agent: Agent,
    data: Mapping[str, Any] | ExecutionReportInput,
    now: datetime | None = None,
    enqueue: bool = True,
) -> SubmittedReport:
    """Store one execution report of ``agent`` and queue its capture.

    Returns the stored report and the capture status: ``queued`` (the capture task will
    run after commit), ``disabled`` (procedural learning is off for the company) or
    ``not_applicable`` (the company's capture strategy cannot fire for this outcome).
    Raises :class:`InvalidInputError` (400) for a bad field and :class:`NotFoundError`
    (404, ``task_not_found``) for a ``task_id`` outside the agent's company.
    """
    report_input = parse_report_input(data)
    company = agent.company
    task = None
    if report_input.task_id is not None:
        task = Task.objects.filter(pk=report_input.task_id, company=company).first()
        if task is None:
            raise NotFoundError(
                TASK_NOT_FOUND,
                code="task_not_found",
                errors=[{"field": "task_id", "message": TASK_NOT_FOUND, "code": "not_found"}],
            )
    config = company_config(company).memory
    redactor = redactor_for(config.redaction)
    counts: dict[str, int] = {}

    def clean(text: str) -> str:
        return redactor.redact_value(text, counts)

    error = report_input.error
    tool_calls = [
        {
            "name": clean(call.name),
            "status": call.status.value,
            **({"error": clean(call.error)} if call.error is not None else {}),
            "duration_ms": call.duration_ms,
        }
        for call in report_input.tool_calls
    ]
    created_at = now or timezone.now()
    report = ExecutionReport.objects.create(
        company=company,
        agent=agent,
        task=task,
        task_title=clean(report_input.task_title or (task.title if task else "")),
        task_type=clean(report_input.task_type),
        task_description=clean(report_input.task_description),
        outcome=report_input.outcome.value,
        error_category=clean(error.category) if error else "",
        error_message=clean(error.message) if error else "",
        tool_calls=tool_calls,
        retry_count=report_input.retry_count,
        turn_count=report_input.turn_count,
        quality_score=report_input.quality_score,
        duration_ms=report_input.duration_ms,
        recovery=clean(report_input.recovery),
        redactions=counts,
        created_at=created_at,
    )
    if report_input.subject is not None:
        ExecutionReportSubject.objects.create(
            report=report, company=company, subject=report_input.subject
        )
    status = initial_capture_status(
        config.procedural, outcome=report.outcome, quality_score=report.quality_score
    )
    capture = ExecutionCapture.objects.create(
        report=report,
        company=company,
        status=status,
        created_at=created_at,
        updated_at=created_at,
        completed_at=None if status == ExecutionCapture.Status.QUEUED else created_at,
        # Its task runs it at once; should that task be lost (a broker failure, a cluster
        # killed before it took the message), the retry dispatcher runs it after the grace.
        next_attempt_at=(
            created_at + LOST_TASK_GRACE if status == ExecutionCapture.Status.QUEUED else None
        ),
    )
    capture_history_record(capture, now=created_at)
    audit_record(
        company=company,
        actor_agent=agent,
        action_type=AuditAction.EXECUTION_REPORT_SUBMITTED,
        target_type="execution_report",
        target_id=report.pk,
        details={"outcome": report.outcome, "capture": status, "redactions": counts},
    )
    if status == ExecutionCapture.Status.QUEUED and enqueue:
        report_id = str(report.pk)
        transaction.on_commit(lambda: enqueue_capture(report_id))
    return SubmittedReport(report=report, capture=status)


def enqueue_capture(report_id: str) -> None:
    """Hand the capture to the q2 cluster. A broker failure leaves the report ``queued``
    and due after :data:`LOST_TASK_GRACE` (the kernel's wake, every 30 s, runs it), never
    fails the submit."""
    from django_q.tasks import async_task

    try:
        async_task(CAPTURE_TASK, report_id, task_name=f"capture-{report_id}", cluster=LLM_CLUSTER)
    except Exception:
        logger.warning("could not enqueue capture of report %s", report_id, exc_info=True)
