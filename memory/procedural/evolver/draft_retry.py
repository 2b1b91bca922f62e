"""Drafting again what failed: the draft job kind and the operator's re-queue.

The kernel's ``jobs-evolver.draft`` schedule runs every minute on the LLM cluster. For
each company with due :class:`~memory.procedural.evolver.models.DraftFailure` rows it re-plans (the
pattern must still pass the thresholds, the evolver must be enabled and org memory not
full, and the pattern must not have been proposed meanwhile — otherwise ``superseded``),
drafts with the LLM and emits the item exactly as a cycle does (``drafted``, method
``llm``). The run is recorded as an :class:`EvolverReport` with trigger ``retry``.

Drafts are durable jobs (:mod:`synthorg.jobs`, the kind :data:`DRAFT_JOB`): claimed under
a lease, reclaimed when a dead worker's lease ends, one company task per company under its
LLM slots. A failed attempt waits :data:`DRAFT_POLICY`'s back-off (1, 2, 4 … min, at most an
hour); after its last attempt the pattern is drafted by rule (the member lessons' text) so
the operator still gets an item, with the LLM's last failure in its evidence (``gave_up``). No
LLM configured any more ⇒ drafted by rule at once (``drafted``, method ``rule``). Per
company, the first attempt that fails on the LLM call stops that company's batch: the
others keep their due time and are not charged an attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.procedural.domain import ProposalError
from memory.procedural.evolver import drafting
from memory.procedural.evolver.draft_failures import (
    DRAFT_POLICY,
    draft_history_record,
    failure_reason,
)
from memory.procedural.evolver.models import (
    OPEN_DRAFT_STATUSES,
    DraftFailure,
    DraftStatus,
    EvolverReport,
)
from memory.procedural.evolver.rule_drafting import skill_advice
from memory.procedural.evolver.services import (
    PROCEDURE,
    count_item,
    eligible_candidates,
    emit_once,
    existing_skills,
    pattern_records,
    previously_proposed,
    rule_proposal,
    run_finish,
)
from orgmemory.models import ApprovalItem, OrgFact
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from persistence.services.jobs import require_operator
from synthorg.errors import ConflictError, NotFoundError
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import job_finish, job_requeue
from synthorg.llm import LLMError

logger = logging.getLogger("memory.procedural.evolver")

RETRY_BATCH = 20
TRIGGER = "retry"

NO_LONGER_ELIGIBLE = "no longer eligible: the pattern is below the thresholds in today's window"
PROPOSED_MEANWHILE = "proposed meanwhile: the pattern already has an item"
EVOLVER_DISABLED = "the evolver is disabled for this company"
ORG_FULL = "org memory holds max_org_entries procedures"
NO_LLM = "no LLM configured: drafted by rule from the member lessons"
GAVE_UP = "gave up after {attempts} attempts; drafted by rule. Last LLM failure: {reason}"
RECLAIMED = (
    "reclaimed: the worker retrying this draft did not finish within its lease ({seconds} s)"
)
DONE = (DraftStatus.DRAFTED, DraftStatus.GAVE_UP, DraftStatus.SUPERSEDED)


def _set(draft: DraftFailure, *, now: datetime, status: str, reason: str | None = None, **fields):
    """Record the outcome of a claimed draft (fenced by its lease) and its history row."""
    job_finish(
        DRAFT_JOB,
        draft,
        status=status,
        reason=draft.reason if reason is None else reason,
        now=now,
        completed=status in DONE,
        **fields,
    )


class _CompanyRun:
    """One company's retry run: its plan, its LLM and its :class:`EvolverReport`."""

    def __init__(self, company: Company, now: datetime) -> None:
        self.company = company
        self.now = now
        config = company_config(company).memory.procedural
        self.procedural = config
        self.config = config.evolver
        self.found = eligible_candidates(company=company, now=now)
        self.eligible = {pattern.key: pattern for pattern in self.found.eligible}
        self.existing = existing_skills(company)
        self.agent_names = dict(Agent.objects.filter(company=company).values_list("pk", "name"))
        self.verdicts: dict[str, int] = {}
        self.report = EvolverReport(
            company=company,
            trigger=TRIGGER,
            started_at=timezone.now(),
            window_start=now - timedelta(days=self.config.window_days),
            window_end=now,
            reports_scanned=self.found.reports_scanned,
            patterns_found=len(self.found.patterns),
        )
        self.provider = completion_provider_for(company=company)
        self.report.method = "rule" if self.provider is None else "llm"
        self.retried = 0

    def close(self) -> None:
        close = getattr(self.provider, "close", None)
        if close is not None:
            close()

    def org_full(self) -> bool:
        live = OrgFact.objects.filter(
            company=self.company, category=PROCEDURE, retracted_at__isnull=True
        ).count()
        return live >= self.config.max_org_entries


@contextmanager
def _company_run(company_id: int, now: datetime) -> Iterator[_CompanyRun]:
    """The job kind's batch: one company's retry run, recorded as an :class:`EvolverReport`
    when it retried anything (or failed)."""
    run = _CompanyRun(Company.objects.get(pk=company_id), now)
    try:
        yield run
    except Exception as exc:  # recorded on the run; the claimed draft is reclaimed later
        logger.exception("SKILL_EVOLVER_DRAFT_RETRY_FAILED company=%s", run.company.slug)
        run.report.error = "\n".join(
            filter(None, [run.report.error, f"{type(exc).__name__}: {exc}"])
        )[:2000]
        run.report.verdicts = run.verdicts
        run_finish(run.report, EvolverReport.Status.FAILED)
        return
    finally:
        run.close()
    run.report.verdicts = run.verdicts
    if run.retried:
        run_finish(run.report, EvolverReport.Status.COMPLETED)


def draft_job_run(draft: DraftFailure, run: _CompanyRun) -> bool:
    """The job kind's ``run``: one claimed draft; ``False`` when the LLM call itself failed
    (the company's batch stops)."""
    run.retried += 1
    return _retry_one(run, draft)


def _retry_one(run: _CompanyRun, draft: DraftFailure) -> bool:
    """One attempt; ``False`` when the LLM call itself failed (the company's batch stops)."""
    now, report = run.now, run.report
    report.patterns_eligible += 1
    say = lambda message: None  # noqa: E731 - runs have no console here
    own_item = draft.item_id  # a re-queued draft's rule item does not block its LLM draft
    pattern = run.eligible.get(draft.pattern)
    reason = None
    if not run.config.enabled:
        reason = EVOLVER_DISABLED
    elif run.org_full():
        reason = ORG_FULL
    elif pattern is None:
        reason = NO_LONGER_ELIGIBLE
    elif previously_proposed(run.company, pattern, exclude_item=own_item):
        reason = PROPOSED_MEANWHILE
    if reason is not None:
        report.skipped_already_proposed += reason == PROPOSED_MEANWHILE
        _set(draft, now=now, status=DraftStatus.SUPERSEDED, reason=reason)
        return True
    assert pattern is not None
    if run.provider is None:
        _by_rule(run, draft, pattern, own_item, status=DraftStatus.DRAFTED, reason=NO_LLM)
        return True
    records = pattern_records(pattern, run.found.details)
    payload = drafting.evidence_payload(
        pattern=pattern.key,
        kind=pattern.kind,
        rate=pattern.rate,
        agents=len(pattern.agent_ids),
        reports=records,
    )
    try:
        proposal, _ = drafting.draft(
            run.provider,
            payload,
            found=skill_advice(records, agent_names=run.agent_names),
            records=records,
            model=run.procedural.model,
            temperature=run.procedural.temperature,
            max_tokens=run.procedural.max_tokens,
        )
    except (LLMError, ProposalError) as exc:
        failure = failure_reason(exc)
        report.drafts_failed += 1
        line = f"draft of {pattern.key} failed: {failure}"
        report.error = "\n".join(filter(None, [report.error, line]))[:2000]
        logger.warning(
            "skill evolver draft retry %d for %s failed: %s", draft.attempts, pattern.key, failure
        )
        if DRAFT_POLICY.gives_up(draft.attempts):
            reason = GAVE_UP.format(attempts=draft.attempts, reason=failure)
            _by_rule(run, draft, pattern, own_item, status=DraftStatus.GAVE_UP, reason=reason)
        else:
            _set(
                draft,
                now=now,
                status=DraftStatus.PENDING,
                reason=failure,
                next_attempt_at=DRAFT_POLICY.next_attempt(draft.attempts, now),
            )
        return not isinstance(exc, LLMError)
    item = emit_once(
        run.company,
        pattern,
        proposal,
        run.existing,
        run.agent_names,
        run.verdicts,
        exclude_item=own_item,
        extra_evidence={"draft_attempts": draft.attempts},
    )
    count_item(report, item, say)
    if item is None:
        _set(draft, now=now, status=DraftStatus.SUPERSEDED, reason=PROPOSED_MEANWHILE)
    else:
        _set(draft, now=now, status=DraftStatus.DRAFTED, method="llm", item=item, reason="")
    return True


def _by_rule(run: _CompanyRun, draft: DraftFailure, pattern, own_item, *, status, reason):
    """Draft from the member lessons; the item's evidence carries the LLM failure."""
    proposal = rule_proposal(run.company, pattern, run.found.details, run.agent_names)
    item = emit_once(
        run.company,
        pattern,
        proposal,
        run.existing,
        run.agent_names,
        run.verdicts,
        method="rule",
        exclude_item=own_item,
        extra_evidence={
            "llm_failure": {"reason": draft.reason, "attempts": draft.attempts},
        },
    )
    count_item(run.report, item, lambda message: None)
    if item is None:
        _set(draft, now=run.now, status=DraftStatus.SUPERSEDED, reason=PROPOSED_MEANWHILE)
        return
    _set(draft, now=run.now, status=status, method="rule", item=item, reason=reason)


OPERATORS_ONLY = "Only operators and admins can re-queue a draft."
DRAFT_NOT_FOUND = "No failed evolver draft with this id in this company."
DRAFT_NOT_REQUEUEABLE = (
    "Only a draft the evolver gave up on can be re-queued; this one is {status}."
)
RULE_ITEM_PENDING = (
    "The rule-drafted item for this pattern is still pending in the inbox: decide it first "
    "(reject it to have the LLM draft the pattern again)."
)
PATTERN_OPEN = "A later run's draft of this pattern is already waiting for a retry."
RULE_ITEM_APPROVED = "The rule-drafted item for this pattern was approved: nothing to redraft."


def evolver_draft_requeue(*, principal, draft_id, now: datetime | None = None) -> DraftFailure:
    """An operator (or admin, owner) re-queues a draft the evolver gave up on: attempts start
    again at zero, it is due now, its history records who did it, and an
    ``evolver_draft.requeued`` audit entry is written in the same transaction. 403 for
    viewers and agents, 404 for another company's draft, 409 unless it is ``gave_up`` with
    its rule item rejected or expired (a pending item is decided first; an approved one
    already published the skill)."""
    require_operator(principal, OPERATORS_ONLY, code="draft_requeue_forbidden")
    now = now or timezone.now()
    with transaction.atomic():
        draft = (
            DraftFailure.objects.select_for_update(of=("self",))
            .select_related("item")
            .filter(pk=draft_id, company=principal.company)
            .first()
        )
        if draft is None:
            raise NotFoundError(DRAFT_NOT_FOUND, code="evolver_draft_not_found")
        if draft.status != DraftStatus.GAVE_UP:
            raise ConflictError(
                DRAFT_NOT_REQUEUEABLE.format(status=draft.get_status_display().lower()),
                code="draft_not_requeueable",
            )
        if draft.item is not None and draft.item.status == ApprovalItem.Status.PENDING:
            raise ConflictError(RULE_ITEM_PENDING, code="draft_rule_item_pending")
        if draft.item is not None and draft.item.status == ApprovalItem.Status.APPROVED:
            raise ConflictError(RULE_ITEM_APPROVED, code="draft_rule_item_approved")
        if (
            DraftFailure.objects.filter(
                company=principal.company, pattern=draft.pattern, status__in=OPEN_DRAFT_STATUSES
            )
            .exclude(pk=draft.pk)
            .exists()
        ):
            raise ConflictError(PATTERN_OPEN, code="draft_pattern_open")
        previous = (draft.status, draft.reason)
        draft = job_requeue(
            DRAFT_JOB,
            draft.pk,
            now=now,
            reason="re-queued by an operator",
            actor=f"user:{principal.user.pk}",
            reset=True,
            due=True,
            record_reason=True,
        )
        audit_record(
            company=principal.company,
            principal=principal,
            action_type=AuditAction.EVOLVER_DRAFT_REQUEUED,
            target_type="evolver_draft",
            target_id=str(draft.pk),
            details={
                "pattern": draft.pattern[:200],
                "previous_status": previous[0],
                "previous_reason": previous[1][:200],
            },
        )
    return draft


def _operator_requeue(*, principal, job_id) -> DraftFailure:
    return evolver_draft_requeue(principal=principal, draft_id=job_id)


def _detail_url(draft: DraftFailure) -> str:
    return reverse("memory_console:evolver-runs") + f"#draft-{draft.pk}"


def _due(now: datetime):
    return DraftFailure.objects.filter(status=DraftStatus.PENDING, next_attempt_at__lte=now)


DRAFT_JOB = JobKind(
    name="evolver.draft",
    model=DraftFailure,
    history=draft_history_record,
    run=draft_job_run,
    queued=DraftStatus.PENDING,
    running=DraftStatus.RETRYING,
    policy=DRAFT_POLICY,
    due=_due,
    batch=_company_run,
    batch_size=RETRY_BATCH,
    reclaimed_reason=RECLAIMED,
    reclaimed_status=DraftStatus.PENDING,
    label="Skill-evolver draft",
    failed_statuses=(DraftStatus.GAVE_UP,),
    describe=lambda draft: draft.pattern,
    detail_url=_detail_url,
    target_type="evolver_draft",
    requeue=_operator_requeue,
)
