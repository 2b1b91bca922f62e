"""A company's scheduled run as a durable job, so it takes a fair turn on the company's LLM
slots instead of being skipped while they are busy.

The kind's row is a :class:`~synthorg.jobs.models.ScheduledRun` (one open run per company)
and the kind takes a slot around every run (``slot_per_run``). The company's schedule calls
:func:`scheduled_run`: it records a ``queued`` run (or takes the company's open one) and
runs it at once under one of the company's LLM slots. With every slot taken the run is
deferred (not an attempt; due again in a few seconds) and waits for its turn: whoever holds
a slot of the company serves it in its pass (oldest due first across the kinds), and the
kind's every-minute dispatch and the kernel's wake hand its company a task — a busy
company's scheduled run waits, it is never skipped. A second tick while it waits takes the
same run. Its lease is kept alive while it runs; after kill -9 of its worker it runs again.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from synthorg.jobs.dispatch import job_run
from synthorg.jobs.models import ScheduledRun
from synthorg.jobs.registry import JobKind

OPEN = (ScheduledRun.Status.QUEUED, ScheduledRun.Status.RUNNING)
#: What the schedule's task answers for a run that waits for its turn.
DEFERRED = "deferred"


def scheduled_run(
    kind: JobKind, *, company_id: int, trigger: str = "schedule", now: datetime | None = None
) -> Any | None:
    """The company's scheduled run of ``kind``: its open run, or a new ``queued`` one, run
    now (:func:`~synthorg.jobs.dispatch.job_run`). Returns the run as it was left
    (``queued``: deferred, waiting for its turn), or ``None`` when another worker runs the
    company's open one."""
    now = now or timezone.now()
    runs: Any = kind.model._default_manager  # a ScheduledRun subclass: it has a company
    with transaction.atomic():
        with connection.cursor() as cursor:  # one open run per company and kind
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"scheduled:{kind.name}:{company_id}"],
            )
        job = runs.filter(company_id=company_id, status__in=OPEN).first()
        if job is None:
            job = runs.create(
                company_id=company_id,
                trigger=trigger,
                created_at=now,
                updated_at=now,
                next_attempt_at=now,  # due: run now, or by the dispatcher's next tick
            )
            kind.history(job, now=now)
    return job_run(kind, job.pk, now=now)


def scheduled_outcome(job: ScheduledRun | None, done: Callable[[Any], Any]) -> Any:
    """What the schedule's task answers: ``done(job)`` once it ran, :data:`DEFERRED` while it
    waits for its turn, ``None`` when another worker has it."""
    if job is None:
        return None
    if job.status == ScheduledRun.Status.QUEUED:
        return DEFERRED
    return done(job)


def scheduled_kind(
    *, name: str, model: type[ScheduledRun], history: Callable[..., Any], run, **options
) -> JobKind:
    """The job kind of a company's scheduled run: the whole run under one of the company's
    LLM slots, or its turn (``slot_per_run``); a run that raises ends ``failed`` (the next
    scheduled run starts afresh); one open run per company. ``run(job, batch)`` does the
    work and records ``done`` with :func:`~synthorg.jobs.services.job_finish`."""
    return JobKind(
        name=name,
        model=model,
        history=history,
        run=run,
        slot_per_run=True,
        crashed_status=ScheduledRun.Status.FAILED,
        select_related=("company",),
        batch_size=1,  # at most one open run per company
        **options,
    )
