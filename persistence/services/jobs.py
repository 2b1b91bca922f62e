"""An operator re-queues a failed durable job of any kind (:mod:`synthorg.jobs`): the
console's failures page calls it for every registered kind without its own re-queue."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from persistence.access import ROLE_RANK
from persistence.audit_actions import AuditAction
from persistence.principal import Principal
from persistence.services.audit import audit_record
from synthorg.errors import AccessDeniedError, ConflictError, NotFoundError
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import job_requeue

OPERATORS_ONLY = "Only operators and admins can re-queue a job."
JOB_NOT_FOUND = "No {label} with this id in this company."
JOB_NOT_REQUEUEABLE = "Only a failed job can be re-queued; this one is {status}."
REQUEUED = "re-queued by an operator"


def require_operator(principal: Principal, message: str, *, code: str) -> None:
    """403 (``code``) unless ``principal`` is a human operator, admin or owner."""
    if not principal.is_human or ROLE_RANK.get(principal.role, -1) < ROLE_RANK["operator"]:
        raise AccessDeniedError(message, code=code)


def job_operator_requeue(
    *, principal: Principal, kind: JobKind, job_id, now: datetime | None = None
):
    """Re-queue one failed job of ``kind`` in ``principal.company``: attempts start again at
    zero, it is due now and handed to a worker after commit (``kind.enqueue``), its history
    names the operator, and a ``<target_type>.requeued`` audit entry is written in the same
    transaction. 403 for viewers and agents, 404 for another company's job (or no such
    job), 409 unless it is in one of ``kind.failed_statuses``."""
    require_operator(principal, OPERATORS_ONLY, code="job_requeue_forbidden")
    now = now or timezone.now()
    target = kind.target_type or kind.name
    with transaction.atomic():
        try:
            job = (
                kind.model.objects.select_for_update(of=("self",))
                .filter(pk=job_id, company_id=principal.company.pk)
                .first()
            )
        except (ValueError, ValidationError):  # not an id of this kind at all
            job = None
        if job is None:
            raise NotFoundError(
                JOB_NOT_FOUND.format(label=kind.title.lower()), code="job_not_found"
            )
        if job.status not in kind.failed_statuses:
            raise ConflictError(
                JOB_NOT_REQUEUEABLE.format(status=job.get_status_display().lower()),
                code="job_not_requeueable",
            )
        previous = (job.status, job.reason)
        job = job_requeue(
            kind,
            job.pk,
            now=now,
            reason=REQUEUED,
            actor=f"user:{principal.user.pk}",
            reset=True,
            due=True,
        )
        audit_record(
            company=principal.company,
            principal=principal,
            action_type=AuditAction.requeued(target),
            target_type=target,
            target_id=str(job.pk),
            details={
                "kind": kind.name,
                "previous_status": previous[0],
                "previous_reason": previous[1][:200],
            },
        )
        if kind.enqueue is not None:
            enqueue, pk = kind.enqueue, job.pk
            transaction.on_commit(lambda: enqueue(pk))
    return job
