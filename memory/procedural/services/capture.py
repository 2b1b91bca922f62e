"""Running the capture pipeline on one report: strategy → proposer → lesson.

Non-critical by design: the report was stored and acknowledged (202) before any of this
runs. Every way it can stop is recorded on the report's :class:`ExecutionCapture` with a
WARNING log, and nothing else breaks:

==========================  =============================================================
``not_applicable``          the strategy does not fire (with the reason, e.g. percentile)
``disabled``                procedural learning was switched off meanwhile
``skipped_memory_level``    the agent's memory level is ``none``
``failed``                  the LLM call failed, or its answer was not a valid proposal
``below_confidence``        the proposal's confidence is under ``min_confidence``
``captured``                a lesson was stored (or the agent already had it: deduplicated)
==========================  =============================================================

``method`` says what wrote the lesson: ``llm`` (the proposer) or ``rule`` — with no LLM
configured the lesson is composed from the report's fields
(:mod:`memory.procedural.rule_lessons`). ``skipped_no_llm`` is no longer written (rows from
before stay readable and are retried like rule captures).

**A durable job** (:mod:`synthorg.jobs`, the kind :data:`CAPTURE_JOB`): the capture is
claimed under a lease, a failure for an LLM reason is retried by :data:`CAPTURE_POLICY`
(1, 2, 4 … min, at most :data:`MAX_ATTEMPTS` runs), a capture that finds every LLM slot of
its company taken is *deferred* (back to ``queued``, due in ``SLOT_DEFER``, the attempt not
counted), a ``running`` capture whose worker died is reclaimed when its lease ends, and the
kernel's ``jobs-procedural.capture`` schedule hands each company with due captures its own
task (:func:`synthorg.jobs.dispatch.jobs_run_company`: the first run whose LLM call fails
stops the company's batch, the others keep their due time uncharged). Every transition is a
:class:`~memory.procedural.models.CaptureStatusChange` row (append-only). This module decides
*what* a run writes; a rule capture is due at once but waits until an LLM is configured
(:func:`_due`), then runs again and its LLM lesson supersedes the rule lesson (kept, marked
superseded).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.procedural.advice import advice_for_report, evidence_of, render_evidence
from memory.procedural.answer_checks import ANSWER_REFUSED, answer_problems
from memory.procedural.capture import decide_capture
from memory.procedural.domain import TIER_TEXT_MAX, ProceduralScope, ProposalError
from memory.procedural.models import (
    CaptureStatus,
    ExecutionCapture,
    ExecutionReport,
    Method,
    ProceduralLesson,
)
from memory.procedural.propagation import strategy_scope
from memory.procedural.proposer import failure_payload, propose, success_payload
from memory.procedural.rule_lessons import RULE_CONFIDENCE, rule_lesson
from memory.procedural.selectors import recent_quality_scores
from memory.procedural.services.history import capture_history_record
from memory.procedural.services.lessons import procedural_lesson_store
from memory.procedural.services.reports import enqueue_capture
from persistence.audit_actions import AuditAction
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from persistence.services.jobs import require_operator
from synthorg.errors import ConflictError, DomainError, NotFoundError
from synthorg.jobs.dispatch import job_llm_slot, job_run
from synthorg.jobs.policy import RetryPolicy
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import (
    job_fail,
    job_finish,
    job_reclaim_expired,
    job_requeue,
)
from synthorg.llm import LLMError, llm_configured
from synthorg.text import clip

logger = logging.getLogger(__name__)

NO_LLM = "no LLM configured (set SYNTHORG_LLM_BASE_URL and SYNTHORG_LLM_MODEL)"
LLM_FAILURE = "llm_error"  # the prefix of a reason naming a failed LLM call (an outage)
MAX_ATTEMPTS = 8
CAPTURE_POLICY = RetryPolicy(max_attempts=MAX_ATTEMPTS)
RETRY_BATCH = 50
RECLAIMED = (
    "reclaimed: the worker running this capture did not finish within its lease ({seconds} s)"
)
GAVE_UP = " (gave up after {attempts} attempts; an operator can re-queue it)"
DEFERRED = (
    "deferred: the company's LLM slots are busy (SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}); "
    "retried at its next attempt"
)
RULE_STANDS_IN = "the rule lesson stands in; the LLM is asked again later"


def _finish(
    capture: ExecutionCapture, status: str, reason: str = "", *, retry: bool = False, **fields
) -> None:
    """Record the run's outcome. ``retry``: an LLM reason — schedule the next attempt with
    back-off while attempts remain."""
    if retry:
        job_fail(
            CAPTURE_JOB, capture, status=status, reason=reason, gave_up_suffix=GAVE_UP, **fields
        )
    else:
        job_finish(CAPTURE_JOB, capture, status=status, reason=reason, **fields)


def report_fields(report: ExecutionReport) -> dict:
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


def _with_day(fields: dict, report: ExecutionReport) -> dict:
    return {**fields, "created_at": report.created_at}


def execution_report_capture(*, report_id, now: datetime | None = None) -> ExecutionCapture:
    """Run the capture pipeline for one queued report; returns its capture row.

    Idempotent: a report whose capture is not ``queued`` (or that another worker claimed
    first) is returned unchanged.
    """
    capture = job_run(CAPTURE_JOB, report_id, batch=now)
    if capture is None:
        current = ExecutionCapture.objects.filter(report_id=report_id).first()
        if current is None:
            raise NotFoundError(
                "No execution report with this id.", code="execution_report_not_found"
            )
        return current
    return capture


def capture_job_run(capture: ExecutionCapture, now: datetime | None) -> bool:
    """The job kind's ``run``: one claimed capture (``now``: the batch's clock); ``False``
    when its LLM call failed (an outage: the company's retry batch stops)."""
    _run(capture, now=now)
    return not capture.reason.startswith(LLM_FAILURE)


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
        return _capture_by_rule(capture, procedural, now=now)
    fields = report_fields(report)
    payload = failure_payload(fields) if decision.path == "failure" else success_payload(fields)
    try:
        with job_llm_slot(CAPTURE_JOB, capture, reason=DEFERRED) as slot:
            if not slot:  # deferred, waiting for its turn: a slot holder serves it
                return capture
            # The client resolves the model (synthorg.llm.resolve_model): a placeholder
            # such as the default ``example-small-001`` is never sent.
            proposal, completion = propose(
                provider,
                payload,
                model=procedural.model,
                temperature=procedural.temperature,
                max_tokens=procedural.max_tokens,
            )
    except LLMError as exc:
        reason = f"{LLM_FAILURE}: {type(exc).__name__}: {exc}"
        logger.warning("procedural capture of report %s failed: %s", report.pk, reason)
        return _fall_back_to_rule(capture, procedural, reason, now=now)
    except ProposalError as exc:
        logger.warning("procedural capture of report %s failed: %s", report.pk, exc.reason)
        return _fall_back_to_rule(capture, procedural, exc.reason, now=now)
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()
    # The LLM words the lesson; the records decide what it advises and state the evidence.
    advice = advice_for_report(fields)
    problems = answer_problems(proposal, records=[fields], advice=advice)
    if problems:
        reason = f"{ANSWER_REFUSED}: {'; '.join(problems)}"
        logger.warning("procedural proposal for report %s refused: %s", report.pk, reason)
        return _fall_back_to_rule(capture, procedural, reason, now=now)
    evidence = render_evidence(evidence_of([_with_day(fields, report)]))
    proposal = proposal.model_copy(
        update={
            "advice": advice.as_dict(),
            "rationale": clip(f"{proposal.rationale} {evidence}", TIER_TEXT_MAX),
        }
    )
    if proposal.confidence < procedural.min_confidence:
        reason = (
            f"confidence {proposal.confidence:g} < min_confidence {procedural.min_confidence:g}"
        )
        logger.warning("procedural proposal for report %s dropped: %s", report.pk, reason)
        if _holds_rule_lesson(capture):
            # The rule lesson stays: a low-confidence LLM answer is no reason to drop it.
            _finish(capture, CaptureStatus.CAPTURED, f"LLM proposal dropped: {reason}")
            return capture
        if procedural.min_confidence <= RULE_CONFIDENCE:
            # The model does not stand by its lesson; the report's own lesson does.
            return _fall_back_to_rule(
                capture, procedural, f"LLM proposal dropped: {reason}", now=now
            )
        _finish(
            capture,
            CaptureStatus.BELOW_CONFIDENCE,
            reason,
            confidence=proposal.confidence,
            method=Method.LLM,
        )
        return capture
    _store_lesson(
        capture,
        proposal=proposal,
        method=Method.LLM,
        model=completion.model,
        supersedes=_rule_lesson_to_supersede(capture),
        now=now,
    )
    return capture


def _store_lesson(
    capture, *, proposal, method: str, model: str, supersedes, now, llm_reason: str = ""
) -> None:
    """``llm_reason``: why the LLM's lesson is not the one stored (the rule lesson stands in;
    the LLM is asked again with back-off)."""
    report = capture.report
    try:
        with transaction.atomic():
            stored = procedural_lesson_store(
                agent=report.agent,
                report=report,
                proposal=proposal,
                origin=capture.strategy,
                model=model,
                method=method,
                supersedes=supersedes,
                now=now,
            )
            if stored.memory_id is None:
                _finish(
                    capture,
                    CaptureStatus.SKIPPED_MEMORY_LEVEL,
                    "the agent's memory level is none",
                )
            elif llm_reason:
                _finish(
                    capture,
                    CaptureStatus.CAPTURED,
                    f"{llm_reason} ({RULE_STANDS_IN})",
                    retry=True,
                    memory_id=stored.memory_id,
                    confidence=proposal.confidence,
                    method=method,
                )
            else:
                _finish(
                    capture,
                    CaptureStatus.CAPTURED,
                    "deduplicated: the agent already holds this lesson"
                    if stored.deduplicated
                    else stored.scope_note,
                    memory_id=stored.memory_id,
                    confidence=proposal.confidence,
                    method=method,
                    # A rule lesson waits for an LLM: due now, run once one is configured.
                    next_attempt_at=(now or timezone.now()) if method == Method.RULE else None,
                )
    except DomainError as exc:  # e.g. the rule lesson was superseded meanwhile
        logger.warning("lesson of report %s not stored: %s", report.pk, exc)
        _finish(capture, CaptureStatus.FAILED, f"store failed: {exc}")


def _fall_back_to_rule(
    capture: ExecutionCapture, procedural, reason: str, *, now
) -> ExecutionCapture:
    """The LLM failed, refused, or its answer was refused: never worse than no LLM — the rule
    lesson is stored (unless the capture already holds it), the reason is recorded on the
    capture, and the LLM is asked again with back-off."""
    if _holds_rule_lesson(capture):
        _finish(capture, CaptureStatus.CAPTURED, f"{reason} ({RULE_STANDS_IN})", retry=True)
        return capture
    return _capture_by_rule(capture, procedural, now=now, llm_reason=reason)


def _capture_by_rule(
    capture: ExecutionCapture, procedural, *, now, llm_reason: str = ""
) -> ExecutionCapture:
    """A rule lesson from the report's fields (method ``rule``): no LLM is configured, or
    (``llm_reason``) the LLM's lesson could not be had."""
    if _holds_rule_lesson(capture):
        # Already captured by rule; the LLM is gone again — nothing new to write.
        _finish(capture, CaptureStatus.CAPTURED, NO_LLM, next_attempt_at=now or timezone.now())
        return capture
    report = capture.report
    proposal = rule_lesson(_with_day(report_fields(report), report), path=capture.strategy)
    # Nothing judged how far a rule lesson applies: it takes the widest peer scope the
    # company's propagation strategy allows (never org: that is for a judged lesson).
    scope = strategy_scope(procedural.propagation.strategy)
    proposal = proposal.model_copy(update={"scope": ProceduralScope(scope)})
    if proposal.confidence < procedural.min_confidence:
        reason = (
            f"rule lesson confidence {proposal.confidence:g} < min_confidence "
            f"{procedural.min_confidence:g}; waiting for an LLM"
        )
        if llm_reason:
            _finish(
                capture,
                CaptureStatus.FAILED,
                f"{llm_reason}; {reason}",
                retry=True,
                confidence=proposal.confidence,
                method=Method.RULE,
            )
            return capture
        _finish(
            capture,
            CaptureStatus.BELOW_CONFIDENCE,
            reason,
            confidence=proposal.confidence,
            method=Method.RULE,
            next_attempt_at=now or timezone.now(),
        )
        return capture
    _store_lesson(
        capture,
        proposal=proposal,
        method=Method.RULE,
        model="",
        supersedes=(),
        now=now,
        llm_reason=llm_reason,
    )
    return capture


def _holds_rule_lesson(capture: ExecutionCapture) -> bool:
    return capture.method == Method.RULE and capture.memory_id is not None


def _rule_lesson_to_supersede(capture: ExecutionCapture) -> tuple:
    """The rule lesson this capture wrote, if still live and the agent's own (a deduplicated
    rule capture points at another report's lesson: that one is replaced by its own run)."""
    if not _holds_rule_lesson(capture):
        return ()
    live = ProceduralLesson.objects.filter(
        memory_id=capture.memory_id,
        report_id=capture.report_id,
        method=Method.RULE,
        memory__superseded_at__isnull=True,
    ).exists()
    return (capture.memory_id,) if live else ()


def execution_captures_reclaim(*, now: datetime | None = None) -> int:
    """Captures ``running`` past their lease (their worker died) become ``failed`` and due
    now; returns how many."""
    return job_reclaim_expired(CAPTURE_JOB, now=now)


def _due(now: datetime):
    due = ExecutionCapture.objects.filter(next_attempt_at__lte=now)
    if not llm_configured():
        # A rule capture waits for an LLM: nothing to run while none is configured.
        due = due.exclude(method=Method.RULE)
    return due


CAPTURE_NOT_REQUEUEABLE = (
    "This capture cannot be re-queued: it is queued or running, or the company's capture "
    "strategy does not apply to the report."
)
OPERATORS_ONLY = "Only operators and admins can re-queue a capture."
REPORT_NOT_FOUND = "No execution report with this id in this company."


def execution_capture_requeue(*, principal, report_id, now: datetime | None = None):
    """An operator (or admin, owner) re-queues one capture of ``principal.company``:
    attempts start again at zero, the history records who did it, the capture task is
    enqueued after commit, and an ``execution_capture.requeued`` audit entry is written in
    the same transaction. 403 for viewers and agents, 404 for another company's report, 409
    for a capture that is queued/running or whose strategy does not apply."""
    require_operator(principal, OPERATORS_ONLY, code="capture_requeue_forbidden")
    now = now or timezone.now()
    with transaction.atomic():
        current = (
            ExecutionCapture.objects.select_for_update()
            .filter(report_id=report_id, company=principal.company)
            .first()
        )
        if current is None:
            raise NotFoundError(REPORT_NOT_FOUND, code="execution_report_not_found")
        if current.status in (
            CaptureStatus.DISABLED,
            CaptureStatus.NOT_APPLICABLE,
            CaptureStatus.QUEUED,
            CaptureStatus.RUNNING,
        ):
            raise ConflictError(CAPTURE_NOT_REQUEUEABLE, code="capture_not_requeueable")
        previous = (current.status, current.reason)
        capture = job_requeue(
            CAPTURE_JOB,
            report_id,
            now=now,
            reason="re-queued by an operator",
            actor=f"user:{principal.user.pk}",
            reset=True,
        )
        audit_record(
            company=principal.company,
            principal=principal,
            action_type=AuditAction.EXECUTION_CAPTURE_REQUEUED,
            target_type="execution_report",
            target_id=str(report_id),
            details={"previous_status": previous[0], "previous_reason": previous[1][:200]},
        )
        queued_id = str(report_id)
        transaction.on_commit(lambda: enqueue_capture(queued_id))
    return capture


def _operator_requeue(*, principal, job_id):
    return execution_capture_requeue(principal=principal, report_id=job_id)


def _describe(capture: ExecutionCapture) -> str:
    return capture.report.task_title


def _detail_url(capture: ExecutionCapture) -> str:
    return reverse("memory_console:execution", args=[capture.report_id])


@contextmanager
def _batch_clock(company_id: int, now: datetime) -> Iterator[datetime]:
    yield now  # a retry batch's lessons are dated by its run


CAPTURE_JOB = JobKind(
    name="procedural.capture",
    model=ExecutionCapture,
    history=capture_history_record,
    run=capture_job_run,
    policy=CAPTURE_POLICY,
    due=_due,
    batch=_batch_clock,
    batch_size=RETRY_BATCH,
    select_related=("report__agent__company",),
    reclaimed_reason=RECLAIMED,
    reclaimed_status=CaptureStatus.FAILED,
    crashed_status=CaptureStatus.FAILED,
    label="Lesson capture",
    failed_statuses=(CaptureStatus.FAILED,),
    describe=_describe,
    detail_url=_detail_url,
    target_type="execution_capture",
    requeue=_operator_requeue,
)
