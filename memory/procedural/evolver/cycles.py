"""The evolver's scheduled cycle as a durable job (:mod:`synthorg.jobs.scheduled`, the kind
:data:`EVOLVER_CYCLE_JOB`), so it takes a fair turn on the company's LLM slots.

The company's schedule (``skill-evolver:company-<id>``, on ``memory.consolidation.interval``,
on the LLM cluster) calls :func:`evolver_cycle_scheduled`: it records a ``queued``
:class:`~memory.procedural.evolver.models.EvolverCycle` (or takes the company's open one)
and runs it at once under one of the company's LLM slots; with every slot taken the cycle
waits for its turn (:mod:`synthorg.jobs.scheduled`) — a busy company's cycle is never
skipped. ``manage.py run_skill_evolver`` runs a cycle directly
(:func:`~memory.procedural.evolver.services.skill_evolver_run_now`) and reports busy slots
to the operator.
"""

from __future__ import annotations

from datetime import datetime

from memory.procedural.evolver.models import EvolverCycle, EvolverCycleStatusChange
from memory.procedural.evolver.services import skill_evolver_run
from persistence.models import Company
from synthorg.jobs.history import history_writer
from synthorg.jobs.scheduled import scheduled_kind, scheduled_outcome, scheduled_run
from synthorg.jobs.services import job_finish


def evolver_cycle_scheduled(
    *, company: Company, trigger: str = "schedule", now: datetime | None = None
) -> EvolverCycle | None:
    """The company's scheduled cycle: its open cycle, or a new ``queued`` one, run now.
    Returns the cycle as the run left it (``queued``: deferred, waiting for its turn), or
    ``None`` when another worker runs the company's open cycle."""
    return scheduled_run(EVOLVER_CYCLE_JOB, company_id=company.pk, trigger=trigger, now=now)


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
    """What the schedule's task answers: the report's status, ``"deferred"`` while the
    cycle waits for its turn, ``None`` when another worker has it."""
    return scheduled_outcome(
        cycle, lambda cycle: cycle.report.status if cycle.report is not None else cycle.status
    )


EVOLVER_CYCLE_JOB = scheduled_kind(
    name="evolver.cycle",
    model=EvolverCycle,
    history=history_writer(EvolverCycleStatusChange, "cycle"),
    run=evolver_cycle_run,
)
