"""Running the capture pipeline on one report: strategy → proposer → lesson.

Non-critical by design: the report was stored and acknowledged (202) before any of this
runs. Every way it can stop is recorded on the report's :class:`ExecutionCapture` with a
WARNING log, and nothing else breaks:

==========================  =============================================================
``not_applicable``          the strategy does not fire (with the reason, e.g. percentile)
``disabled``                procedural learning was switched off meanwhile
``skipped_memory_level``    the agent's memory level is ``none``
``skipped_no_llm``          no LLM is configured
``failed``                  the LLM call failed, or its answer was not a valid proposal
``below_confidence``        the proposal's confidence is under ``min_confidence``
``captured``                a lesson was stored (or the agent already had it: deduplicated)
==========================  =============================================================
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.procedural.capture import decide_capture
from memory.procedural.domain import ProposalError
from memory.procedural.models import CaptureStatus, ExecutionCapture, ExecutionReport
from memory.procedural.proposer import failure_payload, propose, success_payload
from memory.procedural.selectors import recent_quality_scores
from memory.procedural.services.lessons import procedural_lesson_store
from memory.procedural.services.reports import enqueue_capture
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.errors import NotFoundError
from synthorg.llm import LLMError

logger = logging.getLogger(__name__)

NO_LLM = "no LLM configured (set SYNTHORG_LLM_BASE_URL and SYNTHORG_LLM_MODEL)"
REASON_MAX = 1000
STALE_AFTER = timedelta(minutes=15)


def _finish(capture: ExecutionCapture, status: str, reason: str = "", **fields) -> None:
    now = timezone.now()
    capture.status = status
    capture.reason = reason[:REASON_MAX]
    capture.updated_at = now
    capture.completed_at = now
    for name, value in fields.items():
        setattr(capture, name, value)
    capture.save()


def _claim(report_id) -> ExecutionCapture | None:
    """Move a queued capture to running (one worker wins); ``None`` if not queued."""
    with transaction.atomic():
        capture = (
            ExecutionCapture.objects.select_for_update(of=("self",))
            .select_related("report__agent__company")
            .filter(report_id=report_id)
            .first()
        )
        if capture is None:
            raise NotFoundError(
                "No execution report with this id.", code="execution_report_not_found"
            )
        if capture.status != CaptureStatus.QUEUED:
            return None
        capture.status = CaptureStatus.RUNNING
        capture.attempts += 1
        capture.updated_at = timezone.now()
        capture.save(update_fields=["status", "attempts", "updated_at"])
        return capture


def _report_fields(report: ExecutionReport) -> dict:
    return {
        "task_title": report.task_title,
        "task_type": report.task_type,
        "task_description": report.task_description,
        "outcome": report.outcome,
        "error_category": report.error_category,
        "error_message": report.error_message,
        "tool_calls": report.tool_calls,
        "retry_count": report.retry_count,
        "turn_count": report.turn_count,
        "duration_ms": report.duration_ms,
        "recovery": report.recovery,
        "quality_score": report.quality_score,
    }


def execution_report_capture(*, report_id, now: datetime | None = None) -> ExecutionCapture:
    """Run the capture pipeline for one queued report; returns its capture row.

    Idempotent: a report whose capture is not ``queued`` is returned unchanged.
    """
    capture = _claim(report_id)
    if capture is None:
        return ExecutionCapture.objects.get(report_id=report_id)
    try:
        return _run(capture, now=now)
    except Exception as exc:
        # A bug or an outage must not leave the capture "running" forever: record it.
        logger.exception("procedural capture of report %s crashed", report_id)
        _finish(capture, CaptureStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}")
        return capture


def _run(capture: ExecutionCapture, *, now: datetime | None) -> ExecutionCapture:
    report = capture.report
    agent = report.agent
    procedural = company_config(agent.company).memory.procedural
    if not procedural.enabled:
        _finish(capture, CaptureStatus.DISABLED)
        return capture
    decision = decide_capture(
        procedural.capture,
        outcome=report.outcome,
        quality_score=report.quality_score,
        recent_scores=recent_quality_scores(
            report=report, window=procedural.capture.percentile_window
        ),
    )
    if not decision.fires:
        _finish(capture, CaptureStatus.NOT_APPLICABLE, decision.reason)
        return capture
    capture.strategy = decision.path
    if agent.memory_level == "none":
        _finish(capture, CaptureStatus.SKIPPED_MEMORY_LEVEL, "the agent's memory level is none")
        return capture
    provider = completion_provider_for(company=agent.company, agent=agent)
    if provider is None:
        logger.warning("procedural capture of report %s skipped: %s", report.pk, NO_LLM)
        _finish(capture, CaptureStatus.SKIPPED_NO_LLM, NO_LLM)
        return capture
    fields = _report_fields(report)
    payload = failure_payload(fields) if decision.path == "failure" else success_payload(fields)
    try:
        # The client resolves the model (synthorg.llm.resolve_model): a placeholder such as
        # the default ``example-small-001`` is never sent.
        proposal, completion = propose(
            provider,
            payload,
            model=procedural.model,
            temperature=procedural.temperature,
            max_tokens=procedural.max_tokens,
        )
    except LLMError as exc:
        reason = f"llm_error: {type(exc).__name__}: {exc}"
        logger.warning("procedural capture of report %s failed: %s", report.pk, reason)
        _finish(capture, CaptureStatus.FAILED, reason)
        return capture
    except ProposalError as exc:
        logger.warning("procedural capture of report %s failed: %s", report.pk, exc.reason)
        _finish(capture, CaptureStatus.FAILED, exc.reason)
        return capture
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()
    if proposal.confidence < procedural.min_confidence:
        reason = (
            f"confidence {proposal.confidence:g} < min_confidence {procedural.min_confidence:g}"
        )
        logger.warning("procedural proposal for report %s dropped: %s", report.pk, reason)
        _finish(capture, CaptureStatus.BELOW_CONFIDENCE, reason, confidence=proposal.confidence)
        return capture
    with transaction.atomic():
        stored = procedural_lesson_store(
            agent=agent,
            report=report,
            proposal=proposal,
            origin=decision.path,
            model=completion.model,
            now=now,
        )
        if stored.memory_id is None:
            _finish(capture, CaptureStatus.SKIPPED_MEMORY_LEVEL, "the agent's memory level is none")
        else:
            _finish(
                capture,
                CaptureStatus.CAPTURED,
                "deduplicated: the agent already holds this lesson" if stored.deduplicated else "",
                memory_id=stored.memory_id,
                confidence=proposal.confidence,
            )
    return capture


def execution_captures_requeue(
    *, company: Company, now: datetime | None = None, stale_after: timedelta = STALE_AFTER
) -> int:
    """Re-queue captures left ``queued``/``running`` for longer than ``stale_after`` (a lost
    broker message or a worker killed mid-run); returns how many were handed to q2 again."""

    cutoff = (now or timezone.now()) - stale_after
    with transaction.atomic():
        stale = list(
            ExecutionCapture.objects.select_for_update(skip_locked=True)
            .filter(
                company=company,
                status__in=[CaptureStatus.QUEUED, CaptureStatus.RUNNING],
                updated_at__lt=cutoff,
            )
            .values_list("report_id", flat=True)[:1000]
        )
        ExecutionCapture.objects.filter(report_id__in=stale).update(
            status=CaptureStatus.QUEUED, updated_at=timezone.now()
        )
        for report_id in stale:
            transaction.on_commit(lambda report_id=str(report_id): enqueue_capture(report_id))
    return len(stale)
