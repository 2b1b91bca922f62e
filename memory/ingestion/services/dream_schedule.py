"""The company's scheduled dream as a durable job (:mod:`synthorg.jobs.scheduled`, the kind
:data:`SCHEDULED_DREAM_JOB`), so it takes a fair turn on the company's LLM slots.

The company's dream schedule (``ingestion-dream:company-<id>``, on ``memory.dream.interval``,
on the LLM cluster) calls :func:`dream_scheduled`: it records a ``queued``
:class:`~memory.ingestion.models.ScheduledDream` (or takes the company's open one) and runs
it at once, holding one of the company's LLM slots for all its persistent agents' dreams
(:func:`~memory.ingestion.services.dream.company_dream`). With every slot taken the dream
waits for its turn (:mod:`synthorg.jobs.scheduled`) — a busy company's dream is never
skipped. ``manage.py dream`` dreams directly
(:func:`~memory.ingestion.services.dream.dream_now`) and reports busy slots to the operator.
"""

from __future__ import annotations

from datetime import datetime

from memory.ingestion.models import DreamRun, ScheduledDream, ScheduledDreamStatusChange
from memory.ingestion.services.dream import company_dream
from persistence.models import Company
from synthorg.jobs.history import history_writer
from synthorg.jobs.scheduled import scheduled_kind, scheduled_outcome, scheduled_run
from synthorg.jobs.services import job_finish


def dream_scheduled(*, company: Company, now: datetime | None = None) -> ScheduledDream | None:
    """The company's scheduled dream: its open one, or a new ``queued`` one, run now.
    Returns it as the run left it (``queued``: deferred, waiting for its turn), or ``None``
    when another worker runs the company's open dream."""
    return scheduled_run(SCHEDULED_DREAM_JOB, company_id=company.pk, now=now)


def scheduled_dream_run(dream: ScheduledDream, batch=None) -> bool:
    """The kind's ``run``: every persistent agent of the company dreams, under one of its LLM
    slots (the kernel holds it). Each agent's outcome is its :class:`DreamRun` (a failed LLM
    dream too: the next scheduled dream reads the same journal), so it is never an outage."""
    runs = company_dream(company=dream.company, trigger=dream.trigger)
    methods = {run.method for run in runs}
    order = (DreamRun.Method.LLM, DreamRun.Method.EXTRACTIVE)
    method = next((name for name in order if name in methods), "")  # llm if any agent's was
    job_finish(
        SCHEDULED_DREAM_JOB, dream, status=ScheduledDream.Status.DONE, method=method,
        runs=len(runs),
    )  # fmt: skip
    return True


def dream_outcome(dream: ScheduledDream | None) -> int | str | None:
    """What the schedule's task answers: the dream runs recorded, ``"deferred"`` while the
    dream waits for its turn, ``None`` when another worker has it (``"failed"``: it raised)."""
    return scheduled_outcome(
        dream, lambda dream: dream.runs if dream.status == dream.Status.DONE else dream.status
    )


SCHEDULED_DREAM_JOB = scheduled_kind(
    name="ingestion.dream",
    model=ScheduledDream,
    history=history_writer(ScheduledDreamStatusChange, "dream"),
    run=scheduled_dream_run,
)
