"""The claim protocol and the transitions of a durable job.

* :func:`lease_claim` — the one claim protocol: a conditional ``UPDATE`` that takes a row
  whose lease is free (or has passed) and sets a new one; nothing happens when another
  worker holds it. No row lock is held across the work.
* :func:`job_claim` — :func:`lease_claim` for a durable job: it moves from the kind's
  ``queued`` status to ``running`` with a lease (``claimed_until``) and one more attempt.
* :func:`job_execute` — run one claimed job the way every worker does: the kind's
  ``run(job, batch)`` under a keeper thread that renews the short lease
  (:func:`lease_kept`), a lost lease logged, a crash recorded (``kind.crashed_status``);
  :func:`synthorg.jobs.dispatch.job_run` claims and executes one job (a job's own task).
* :func:`job_extend` — a long run renews its lease step by step (or learns it lost it).
* :func:`job_finish` — the outcome of a claimed run, fenced by the lease the claim took: a
  worker whose lease expired (and whose job was reclaimed) cannot overwrite a later run
  (:class:`LeaseLost`).
* :func:`job_renew` — a long job's worker shows it is alive: its lease is extended (with
  what it saved on the way), fenced like :func:`job_finish`.
* :func:`job_fail` — a failure the policy retries: due again after the back-off, or given up.
* :func:`job_defer` — the company's LLM slots were busy: back to ``queued``, due in a few
  seconds, the attempt not counted.
* :func:`job_requeue` — back to ``queued`` (a retry, or an operator's re-queue: recorded with
  its actor in the history; the caller writes its audit entry in the same transaction).
* :func:`job_reclaim_expired` — running jobs whose lease has passed (their worker died) are
  due again at once.

Every transition appends one row to the kind's history, in the same transaction.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from django.db import connections, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from synthorg.jobs.registry import JobKind

logger = logging.getLogger(__name__)

REASON_MAX = 1000
#: How long a job deferred for busy LLM slots waits before it is due again.
SLOT_DEFER = timedelta(seconds=15)


class LeaseLost(Exception):
    """The run's lease expired and its job was reclaimed meanwhile: its outcome is dropped
    (and whatever it wrote in the same transaction is rolled back)."""


def lease_claim(rows, *, lease_field: str, until: datetime, now: datetime, **values) -> bool:
    """The claim protocol: one conditional ``UPDATE`` of ``rows`` (a queryset naming one row
    and the state the claimer saw) setting ``lease_field`` to ``until`` and ``values``, only
    where no lease holds (``lease_field`` null or passed). ``True`` when this worker took it."""
    free = Q(**{f"{lease_field}__isnull": True}) | Q(**{f"{lease_field}__lte": now})
    return rows.filter(free).update(**{lease_field: until}, **values) == 1


def job_claim(kind: JobKind, pk, *, now: datetime | None = None, queryset=None, due_only=False):
    """Claim job ``pk`` of ``kind`` for this worker: ``queued`` → ``running`` with a lease of
    ``kind.lease()``, ``attempts + 1``, not due any more. Returns the claimed job (loaded
    from ``queryset``, default the kind's model) or ``None`` when it was not claimable
    (another worker claimed it first, or it is not queued; ``due_only``: or not due yet)."""
    now = now or timezone.now()
    rows = kind.model._default_manager.filter(pk=pk, status=kind.queued)
    if due_only:
        rows = rows.filter(next_attempt_at__lte=now)
    with transaction.atomic():
        if not lease_claim(
            rows,
            lease_field="claimed_until",
            until=now + kind.lease(),
            now=now,
            status=kind.running,
            attempts=F("attempts") + 1,
            next_attempt_at=None,
            updated_at=now,
        ):
            return None
        job = (queryset if queryset is not None else kind.objects()).get(pk=pk)
        kind.history(job, now=now, reason="")
    return job


def _guard(job) -> threading.RLock:
    """The lock between a job's worker and its keeper thread over the lease token
    (``claimed_until``) of the one instance both hold."""
    return job.__dict__.setdefault("_lease_guard", threading.RLock())


@contextlib.contextmanager
def lease_kept(renew: Callable[[], object], lease: timedelta) -> Iterator[None]:
    """While the block runs, a keeper thread calls ``renew()`` every third of ``lease`` (its
    own database connection, closed at the end): a live worker keeps its short lease, a
    killed one loses it within ``lease``. A failing renewal is logged and tried again."""
    stop = threading.Event()

    def keep() -> None:
        try:
            while not stop.wait(lease.total_seconds() / 3):
                try:
                    renew()
                except Exception:
                    logger.exception("renewing a lease failed")
        finally:
            connections.close_all()  # this thread's own connection

    keeper = threading.Thread(target=keep, name="lease-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join()


def _keep_alive(kind: JobKind, job) -> None:
    """One beat of ``job``'s keeper: extend its lease to ``now + kind.lease()``, fenced like
    :func:`job_renew`, never waiting on the row (the worker's own transaction may hold it:
    that beat is skipped)."""
    with _guard(job):
        token = job.claimed_until
        if token is None or job.status != kind.running:
            return
        until = timezone.now() + kind.lease()
        with transaction.atomic():
            held = (
                kind.model._default_manager.select_for_update(skip_locked=True)
                .filter(pk=job.pk, status=kind.running, claimed_until=token)
                .values_list("pk", flat=True)
                .first()
            )
            if held is None:
                return
            kind.model._default_manager.filter(pk=job.pk).update(claimed_until=until)
        job.claimed_until = until


def job_execute(kind: JobKind, job, batch=None) -> bool | None:
    """Run ``job``, claimed by this worker: ``kind.run(job, batch)`` while a keeper renews its
    lease (``kind.keep_alive``). A lost lease (the job was reclaimed meanwhile) is logged; a
    run that raises gets ``kind.crashed_status`` (``internal error: …``) when the kind has
    one, else the exception propagates. Returns what ``run`` returned (``True`` after a lost
    lease or a recorded crash: not an outage)."""
    keeper = (
        lease_kept(lambda: _keep_alive(kind, job), kind.lease())
        if kind.keep_alive
        else contextlib.nullcontext()
    )
    with keeper:
        try:
            return kind.run(job, batch)
        except LeaseLost:
            logger.warning("%s %s lost its lease: a later run records it", kind.name, job.pk)
            return True
        except Exception as exc:
            if kind.crashed_status is None:
                raise
            logger.exception("%s %s crashed", kind.name, job.pk)
            with contextlib.suppress(LeaseLost):
                job_finish(
                    kind,
                    job,
                    status=kind.crashed_status,
                    reason=f"internal error: {type(exc).__name__}: {exc}",
                )
            return True


def job_finish(
    kind: JobKind,
    job,
    *,
    status: str,
    reason: str = "",
    now: datetime | None = None,
    completed: bool = True,
    history_reason: str | None = None,
    actor: str = "",
    **fields,
) -> None:
    """Record the outcome of ``job`` (saved with ``fields``), end its lease and append the
    transition to its history, atomically. Raises :class:`LeaseLost` when ``job`` was
    claimed by this worker but its lease has been taken over meanwhile."""
    with _guard(job):
        _finish(
            kind,
            job,
            status,
            reason,
            now or timezone.now(),
            completed,
            history_reason,
            actor,
            fields,
        )


def _finish(kind, job, status, reason, now, completed, history_reason, actor, fields) -> None:
    token = job.claimed_until
    was_claimed = job.status == kind.running
    job.status = status
    job.reason = reason[:REASON_MAX]
    job.updated_at = now
    job.claimed_until = None
    if completed:
        job.completed_at = now
    if "next_attempt_at" not in fields:
        fields["next_attempt_at"] = None
    for name, value in fields.items():
        setattr(job, name, value)
    # Every field, as ``save()`` would: a run may have set others on the way (a strategy).
    values = {
        field.attname: getattr(job, field.attname)
        for field in kind.model._meta.concrete_fields
        if not field.primary_key
    }
    with transaction.atomic():
        rows = kind.model._default_manager.filter(pk=job.pk)
        if was_claimed:
            rows = rows.filter(status=kind.running, claimed_until=token)
        updated = rows.update(**values)
        if not updated:
            raise LeaseLost(f"{kind.name} {job.pk}: the lease of this run was taken over")
        kind.history(job, now=now, reason=history_reason, actor=actor)


def job_renew(
    kind: JobKind,
    job,
    *,
    lease: timedelta | None = None,
    now: datetime | None = None,
    **fields,
) -> bool:
    """Extend the lease of ``job``, claimed by this worker, to ``now + lease`` (default
    ``kind.lease()``), saving ``fields`` with it (a long job's progress). Fenced by the lease
    the worker holds: ``False`` — nothing saved — when the job left ``running`` (cancelled)
    or its lease was taken over (reclaimed): the worker stops. No history row: the status
    does not change."""
    now = now or timezone.now()
    until = now + (lease if lease is not None else kind.lease())
    with _guard(job):
        updated = kind.model._default_manager.filter(
            pk=job.pk, status=kind.running, claimed_until=job.claimed_until
        ).update(claimed_until=until, updated_at=now, **fields)
        if updated:
            job.claimed_until, job.updated_at = until, now
            for name, value in fields.items():
                setattr(job, name, value)
    return bool(updated)


def job_extend(kind: JobKind, job, *, now: datetime | None = None, **fields) -> None:
    """:func:`job_renew` for a worker that stops by exception: raises :class:`LeaseLost`
    when the job is not this worker's any more (reclaimed, or ended by someone else — e.g.
    superseded)."""
    if not job_renew(kind, job, now=now, **fields):
        raise LeaseLost(f"{kind.name} {job.pk}: the lease of this run was taken over")


def job_fail(
    kind: JobKind,
    job,
    *,
    status: str,
    reason: str,
    now: datetime | None = None,
    gave_up_suffix: str = "",
    gave_up_status: str | None = None,
    **fields,
) -> bool:
    """A failure the kind's policy retries: due again after the back-off, or — after the
    policy's last attempt — given up (``reason`` + ``gave_up_suffix``, formatted with
    ``attempts``). ``gave_up_status``: the status of a job given up (``status`` is then the
    one of a job waiting for its retry, not completed). Returns whether it will be retried."""
    now = now or timezone.now()
    next_attempt = kind.policy.next_attempt(job.attempts, now)
    if next_attempt is None:
        reason += gave_up_suffix.format(attempts=job.attempts)
        status = gave_up_status or status
    job_finish(
        kind,
        job,
        status=status,
        reason=reason,
        now=now,
        next_attempt_at=next_attempt,
        completed=gave_up_status is None or next_attempt is None,
        **fields,
    )
    return next_attempt is not None


def job_defer(kind: JobKind, job, *, reason: str, now: datetime | None = None, **fields) -> None:
    """Every LLM slot of the job's company is taken: back to ``queued``, due in
    :data:`SLOT_DEFER`, this run not counted as an attempt (the worker is free at once);
    ``fields`` are saved with it (e.g. a deferral counter)."""
    now = now or timezone.now()
    job_finish(
        kind,
        job,
        status=kind.queued,
        reason=reason,
        now=now,
        completed=False,
        attempts=max(job.attempts - 1, 0),
        next_attempt_at=now + SLOT_DEFER,
        completed_at=None,
        **fields,
    )


def job_requeue(
    kind: JobKind,
    pk,
    *,
    now: datetime | None = None,
    reason: str,
    actor: str = "",
    reset: bool = False,
    due: bool = False,
    record_reason: bool = False,
    queryset=None,
):
    """Move job ``pk`` back to ``queued`` (``reset``: attempts start again at zero; ``due``:
    due now, else not due until a worker takes it; ``record_reason``: ``reason`` also
    replaces the row's) with a history row naming ``actor``.
    ``None`` when it is queued or running (or changed meanwhile: no wait on its lock)."""
    now = now or timezone.now()
    with transaction.atomic():
        job = (
            (queryset if queryset is not None else kind.model._default_manager)
            .select_for_update(skip_locked=True, of=("self",))
            .filter(pk=pk)
            .exclude(status__in=[kind.queued, kind.running])
            .first()
        )
        if job is None:
            return None
        job.status = kind.queued
        job.next_attempt_at = now if due else None
        job.claimed_until = None
        job.updated_at = now
        job.completed_at = None
        if reset:
            job.attempts = 0
        if record_reason:
            job.reason = reason[:REASON_MAX]
        job.save(
            update_fields=[
                "reason",
                "status",
                "next_attempt_at",
                "claimed_until",
                "updated_at",
                "completed_at",
                "attempts",
            ]
        )
        kind.history(job, now=now, reason=reason, actor=actor)
    return job


def lease_expired(kind: JobKind, now: datetime) -> Q:
    """Running jobs whose lease has passed (a row without one is leased from ``updated_at``)."""
    return Q(status=kind.running) & Q(lease_end__lt=now)


def job_reclaim_expired(kind: JobKind, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Running jobs of ``kind`` whose lease has passed (their worker died) get the kind's
    reclaimed status, due now, with a history row saying why; returns how many."""
    now = now or timezone.now()
    lease = kind.lease()
    reason = kind.reclaimed_reason.format(seconds=int(lease.total_seconds()))
    status = kind.reclaimed_status or kind.queued
    with transaction.atomic():
        stale = list(
            kind.model._default_manager.select_for_update(skip_locked=True, of=("self",))
            .annotate(lease_end=Coalesce("claimed_until", F("updated_at") + lease))
            .filter(lease_expired(kind, now))
            .order_by("updated_at")[:limit]
        )
        for job in stale:
            job.status = status
            job.reason = reason
            job.claimed_until = None
            job.updated_at = now
            job.completed_at = None if status == kind.queued else now
            job.next_attempt_at = now - kind.grace  # due at once, even past a kind's grace
            job.save(
                update_fields=[
                    "status",
                    "reason",
                    "claimed_until",
                    "updated_at",
                    "completed_at",
                    "next_attempt_at",
                ]
            )
            kind.history(job, now=now)
    if stale:
        logger.warning("reclaimed %d orphaned %s jobs", len(stale), kind.name)
    return len(stale)
