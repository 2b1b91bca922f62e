"""The evolver's scheduled cycle as a durable job (:mod:`synthorg.jobs`, the kind
:data:`EVOLVER_CYCLE_JOB`), so it takes a fair turn on the company's LLM slots.

The company's schedule (``skill-evolver:company-<id>``, on ``memory.consolidation.interval``,
on the LLM cluster) calls :func:`evolver_cycle_scheduled`: it records a ``queued``
:class:`~memory.procedural.evolver.models.EvolverCycle` (or takes the company's open one)
and runs it at once under one of the company's LLM slots. With every slot taken the cycle is
deferred (not an attempt; due again in a few seconds) and waits for its turn: whoever holds
a slot of the company serves it in its pass (oldest due first across the kinds), and the
kind's every-minute dispatch and the kernel's wake hand its company a task — a busy
company's cycle waits, it is never skipped. The cycle's lease is kept alive while it runs;
after kill -9 of its worker it runs again. ``manage.py run_skill_evolver`` runs a cycle
directly (:func:`~memory.procedural.evolver.services.skill_evolver_run_now`) and reports
busy slots to the operator.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.procedural.evolver.models import EvolverCycle, EvolverCycleStatusChange
from memory.procedural.evolver.services import skill_evolver_run
from persistence.models import Company
from synthorg.jobs.dispatch import job_run
from synthorg.jobs.history import history_writer
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import job_finish

OPEN = (EvolverCycle.Status.QUEUED, EvolverCycle.Status.RUNNING)
#: What the schedule's task answers for a cycle that waits for its turn.
DEFERRED = "deferred"


def evolver_cycle_scheduled(
    *, company: Company, trigger: str = "schedule", now: datetime | None = None
) -> EvolverCycle | None:
    """The company's scheduled cycle: its open cycle, or a new ``queued`` one, run now
    (:func:`~synthorg.jobs.dispatch.job_run`). Returns the cycle as the run left it
    (``queued``: deferred, waiting for its turn), or ``None`` when another worker runs the
    company's open cycle."""
    now = now or timezone.now()
    with transaction.atomic():
        Company.objects.select_for_update().get(pk=company.pk)  # one open cycle per company
        cycle = EvolverCycle.objects.filter(company=company, status__in=OPEN).first()
        if cycle is None:
            cycle = EvolverCycle.objects.create(
                company=company,
                trigger=trigger,
                created_at=now,
                updated_at=now,
                next_attempt_at=now,  # due: run now, or by the dispatcher's next tick
            )
            EVOLVER_CYCLE_JOB.history(cycle, now=now)
    return job_run(EVOLVER_CYCLE_JOB, cycle.pk, now=now)


def evolver_cycle_run(cycle: EvolverCycle, batch=None) -> bool:
    """The kind's ``run``: one claimed cycle, under one of its company's LLM slots (the
    kernel holds it). The cycle records its own problems in its report (LLM failures go to
    the draft retries), so it is never an outage."""
    report = skill_evolver_run(company=cycle.company, trigger=cycle.trigger)
    job_finish(
        EVOLVER_CYCLE_JOB, cycle, status=EvolverCycle.Status.DONE, method=report.method,
        report=report,
    )  # fmt: skip
    return True


def evolver_cycle_outcome(cycle: EvolverCycle | None) -> str | None:
    """What the schedule's task answers: the report's status, :data:`DEFERRED` while the
    cycle waits for its turn, ``None`` when another worker has it."""
    if cycle is None:
        return None
    if cycle.status == EvolverCycle.Status.QUEUED:
        return DEFERRED
    return cycle.report.status if cycle.report is not None else cycle.status


EVOLVER_CYCLE_JOB = JobKind(
    name="evolver.cycle",
    model=EvolverCycle,
    history=history_writer(EvolverCycleStatusChange, "cycle"),
    run=evolver_cycle_run,
    slot_per_run=True,  # the whole cycle under one of the company's LLM slots, or its turn
    crashed_status=EvolverCycle.Status.FAILED,
    select_related=("company",),
    batch_size=1,  # at most one open cycle per company
)
