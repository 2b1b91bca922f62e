"""The per-company dispatcher: due jobs run under the company's LLM slots, in fair turns.

:func:`jobs_dispatch` (a kind's every-minute schedule ``jobs-<name>``) reclaims the kind's
orphaned jobs (their lease passed) and hands every company with due jobs its own task on
the LLM cluster (:data:`COMPANY_TASK` with the kind's name), so a company whose model hangs
holds up only its own task. That task calls :func:`jobs_run_company`: with one of the
company's LLM slots (:mod:`synthorg.llm.slots`) it claims and runs the due jobs, oldest
first; the first run whose LLM call fails (an outage) stops the batch, the others keep
their due time uncharged.

**Fair turns.** A kind whose company task finds every slot taken does not run, and records
that it waits (:class:`~synthorg.jobs.models.JobTurn`). Whoever holds a slot of that
company — another kind's batch — serves the waiting kinds' due jobs in the same pass as
its own, **oldest due first across kinds**, one job at a time (:func:`jobs_serve_slot`), so
two kinds whose ticks collide every minute cannot starve each other and a retry that waited
is not put behind the holder's whole batch (:func:`jobs_wait_turn`, :func:`jobs_take_turn`,
:func:`jobs_serve_turns`).

**The wake** (:func:`jobs_wake`, every 30 s) reclaims every kernel-kept kind's lapsed
leases and dispatches its due jobs at once, so a killed worker's job runs again within its
20 s lease plus 30 s, not at a kind's next minute tick.

**Work that is not LLM work** (``kind.llm_slots`` false: webhook deliveries, re-embedding):
its company tasks go to the default cluster and run their batch without a slot or a turn —
still one task per company, so one company's dead endpoint holds up only its own task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone
from django_q.tasks import async_task

from synthorg.jobs.models import JobTurn
from synthorg.jobs.registry import JobKind, job_kinds
from synthorg.jobs.services import (
    job_claim,
    job_defer,
    job_execute,
    job_reclaim_expired,
    job_requeue,
)
from synthorg.llm.slots import company_llm_concurrency, company_llm_slot
from synthorg.schedules import LLM_CLUSTER

logger = logging.getLogger(__name__)

RETRY_REASON = "retry"
#: The kernel's tasks of a kind (by its name): a company's batch, one job's own run.
COMPANY_TASK = "synthorg.jobs.tasks.jobs_company"
JOB_TASK = "synthorg.jobs.tasks.job_run_task"
SLOT_DEFERRED = (
    "deferred: the company's LLM slots are busy (SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}); "
    "it runs at its turn"
)


@dataclass(frozen=True)
class JobDispatch:
    reclaimed: int  # running jobs a dead worker left, due again
    companies: tuple[int, ...]  # the companies handed a task


@dataclass(frozen=True)
class JobRunSummary:
    reclaimed: int  # orphaned jobs made due again (by :func:`jobs_run_due`)
    retried: int  # jobs claimed and run
    waiting: int  # due, left for later: the LLM failed, or the company's slots were busy
    busy: bool = False  # every LLM slot of the company was taken: nothing ran


def jobs_dispatch(
    kind: JobKind, *, now: datetime | None = None, prepare: bool = True
) -> JobDispatch:
    """Make the kind's jobs of what became due (``kind.prepare``; not for the wake:
    ``prepare=False``), reclaim its orphaned jobs, then enqueue :data:`COMPANY_TASK`
    ``(kind.name, company_id)`` for every company with due jobs, on the LLM cluster for LLM
    work. Nothing runs here. ``now`` (tests) is passed on."""
    if prepare and kind.prepare is not None:
        kind.prepare(now or timezone.now(), None, None)
    reclaimed = job_reclaim_expired(kind, now=now or timezone.now())
    task = (COMPANY_TASK, kind.name)
    companies = companies_dispatch(kind.due_jobs, task, now=now, llm=kind.llm_slots)
    return JobDispatch(reclaimed=reclaimed, companies=companies)


def companies_dispatch(
    due: Callable[[datetime], Any], task: tuple, *, now: datetime | None = None, llm: bool = True
) -> tuple[int, ...]:
    """Enqueue ``task`` (its dotted path and leading arguments) with each ``company_id`` of
    the rows ``due(now)`` returns — on the LLM cluster for ``llm`` work. Nothing runs here,
    so a company whose LLM hangs holds up only its own task. ``now`` (tests) is passed on."""
    rows = due(now or timezone.now())
    companies = tuple(rows.order_by("company_id").values_list("company_id", flat=True).distinct())
    kwargs: dict[str, object] = {"now": now} if now is not None else {}
    if llm:
        kwargs["cluster"] = LLM_CLUSTER
    for company_id in companies:
        async_task(*task, company_id, **kwargs)
    return companies


def job_enqueue(kind: JobKind, pk) -> None:
    """Hand job ``pk`` to a worker now (the kernel's task runs :func:`job_run`; call it on
    commit). A lost message is harmless: the job is due, the next dispatch runs it."""
    try:
        async_task(JOB_TASK, kind.name, str(pk), cluster=LLM_CLUSTER if kind.llm_slots else None)
    except Exception:
        logger.exception("queueing %s %s failed; the dispatcher runs it", kind.name, pk)


def job_run(kind: JobKind, pk, *, now: datetime | None = None, batch=None, queryset=None):
    """What a job's own task does: claim job ``pk`` and run it (:func:`job_execute`) — for a
    kind with ``slot_per_run`` under one of its company's LLM slots, or, with every slot
    taken, deferred (not an attempt) to wait for its turn. Returns the job as the run left
    it, or ``None`` when it was not claimable."""
    job = job_claim(kind, pk, now=now, queryset=queryset)
    if job is None:
        return None
    if not kind.slot_per_run:
        job_execute(kind, job, batch)
        return job
    with job_llm_slot(kind, job, now=now) as slot:
        if slot:
            job_execute(kind, job, batch)
    return job


@contextmanager
def job_llm_slot(
    kind: JobKind, job, *, now: datetime | None = None, reason: str = SLOT_DEFERRED, **fields
) -> Iterator[bool]:
    """One of the claimed ``job``'s company LLM slots while the block runs (``True``); with
    every slot taken the job is deferred (:func:`~synthorg.jobs.services.job_defer`: not an
    attempt, ``reason`` formatted with the company's ``limit``, ``fields`` saved with it) and
    waits for its turn (``False``: the block must not call the LLM)."""
    with company_llm_slot(job.company_id) as slot:
        if not slot:
            logger.info("%s %s deferred: LLM slots busy", kind.name, job.pk)
            jobs_wait_turn(job.company_id, kind.name, now=now or timezone.now())
            limit = company_llm_concurrency()
            job_defer(kind, job, reason=reason.format(limit=limit), now=now, **fields)
        yield slot


def _due(kind: JobKind, company_id: int, now: datetime, limit: int) -> list[tuple]:
    """``company_id``'s due jobs of ``kind``: ``(next_attempt_at, pk, status)``, oldest first."""
    return list(
        kind.due_jobs(now)
        .filter(company_id=company_id)
        .order_by("next_attempt_at", "pk")
        .values_list("next_attempt_at", "pk", "status")[:limit]
    )


def jobs_run_company(
    kind: JobKind, *, company_id: int, now: datetime | None = None, limit: int | None = None
) -> JobRunSummary:
    """Run ``company_id``'s due jobs of ``kind`` (oldest first, at most ``limit``) while
    holding one of its LLM slots, in turn with the kinds waiting for that company
    (oldest due first across them: :func:`jobs_serve_slot`); with every slot taken run
    nothing (``busy``) and wait for a turn. A kind without ``llm_slots`` runs its batch at
    once. ``kind.prepare`` runs first, ``kind.while_busy`` when every slot is taken."""
    now = now or timezone.now()
    limit = limit or kind.batch_size
    if kind.prepare is not None:
        kind.prepare(now, company_id, limit)
    due = _due(kind, company_id, now, limit)
    if not due:
        return JobRunSummary(reclaimed=0, retried=0, waiting=0)
    if not kind.llm_slots:
        return _run_batch(kind, company_id, due, now)
    with company_llm_slot(company_id) as slot:
        if not slot:
            logger.info("%s jobs of company %s wait: LLM slots busy", kind.name, company_id)
            jobs_wait_turn(company_id, kind.name, now=now)
            if kind.while_busy is not None:
                kind.while_busy(company_id, now, limit)
            return JobRunSummary(reclaimed=0, retried=0, waiting=len(due), busy=True)
        served = jobs_serve_slot(company_id, now=now, own=(kind, due), holder=kind.name)
    return served.own


def _resume(kind: JobKind, pk, now: datetime) -> bool:
    if kind.resume is not None:
        return kind.resume(pk, now)
    return job_requeue(kind, pk, now=now, reason=RETRY_REASON, due=True) is not None


def _run_one(kind: JobKind, pk, status: str, now: datetime, batch) -> bool | None:
    """Claim and run one due job (the caller holds a slot): ``None`` when it was not
    claimable, else what the run returned (``False``: the LLM call failed, an outage)."""
    # A failed or provisional result is moved back to queued first (history: retry).
    if status != kind.queued and not _resume(kind, pk, now):
        return None
    job = job_claim(kind, pk, now=now, due_only=True)
    if job is None:
        return None
    return job_execute(kind, job, batch) is not False


def _run_batch(kind: JobKind, company_id: int, due: list[tuple], now: datetime) -> JobRunSummary:
    """Claim and run ``due`` (no slot: a kind without ``llm_slots``)."""
    jobs_take_turn(company_id, kind.name)
    retried = waiting = 0
    with kind.batch(company_id, now) as batch:
        for index, (_, pk, status) in enumerate(due):
            outcome = _run_one(kind, pk, status, now, batch)
            if outcome is None:
                continue
            retried += 1
            if outcome is False:  # the LLM call itself failed: an outage
                waiting = len(due) - index - 1
                break
    return JobRunSummary(reclaimed=0, retried=retried, waiting=waiting)


def jobs_wait_turn(company_id: int, name: str, *, now: datetime) -> None:
    """Job kind ``name`` found every LLM slot of ``company_id`` taken: it waits for
    a turn (one row per company and name, however often it is found busy)."""
    JobTurn.objects.get_or_create(company_id=company_id, kind=name, defaults={"waiting_since": now})


def jobs_take_turn(company_id: int, name: str) -> None:
    """``name`` runs now under a slot of ``company_id``: its wait, if any, is over."""
    JobTurn.objects.filter(company_id=company_id, kind=name).delete()


@dataclass
class _Lane:
    """One kind's due jobs in a slot holder's service: run one at a time, oldest first."""

    kind: JobKind
    due: list[tuple]  # (next_attempt_at, pk, status), oldest first
    retried: int = 0
    waiting: int = 0
    batch: Any = None
    opened: bool = False


@dataclass(frozen=True)
class SlotService:
    own: JobRunSummary  # the holder's own kind (empty when only serving turns)
    ran: int  # runs made for the kinds that waited for their turn


#: At most this many picks per slot service (every kind's batch is bounded anyway).
_MAX_PICKS = 1000


def _candidates(company_id: int, now: datetime, lanes: dict, holder: str, kinds):
    """The work waiting at ``company_id`` as ``(due, name, lane)``; a waiting kind joins
    ``lanes`` (its turn is over: it is served now)."""
    candidates: list[tuple] = []
    for turn in JobTurn.objects.filter(company_id=company_id).exclude(kind=holder):
        kind = kinds.get(turn.kind)
        if kind is None:
            turn.delete()
        elif turn.kind not in lanes:
            try:
                lanes[turn.kind] = _Lane(kind, _due(kind, company_id, now, kind.batch_size))
            except Exception:  # its own turn logs and keeps its jobs due
                logger.exception("%s turn of company %s failed", kind.name, company_id)
                continue
            turn.delete()
    candidates.extend((lane.due[0][0], name, lane) for name, lane in lanes.items() if lane.due)
    return candidates


def _serve_lane(lane: _Lane, company_id: int, now: datetime, stack: ExitStack, own: bool) -> int:
    """Run ``lane``'s oldest due job; returns 1 when a run was made. A raising run stops the
    lane (logged) unless it is the holder's ``own`` kind: that propagates, as ever."""
    _, pk, status = lane.due.pop(0)
    try:
        if not lane.opened:
            lane.batch = stack.enter_context(lane.kind.batch(company_id, now))
            lane.opened = True
        outcome = _run_one(lane.kind, pk, status, now, lane.batch)
    except Exception:
        if own:
            raise
        logger.exception("%s turn of company %s failed", lane.kind.name, company_id)
        lane.due.clear()
        return 0
    if outcome is None:
        return 0
    lane.retried += 1
    if outcome is False:  # the LLM call failed (an outage): this kind stops
        lane.waiting = len(lane.due)
        lane.due.clear()
    return 1


def jobs_serve_slot(
    company_id: int,
    *,
    now: datetime,
    own: tuple[JobKind, list[tuple]] | None = None,
    holder: str = "",
) -> SlotService:
    """Run the holder's due jobs (``own``: its kind and :func:`_due` list) and the due work of
    every kind waiting for a turn at ``company_id`` — **oldest due first across them**, one
    job at a time, so no kind's batch goes ahead of another kind's older job: a capture
    retry that waited behind extraction runs is served in due order, not after the holder's
    whole batch. Turns recorded while the holder serves join in. The caller
    holds one of the company's LLM slots; each kind's ``batch`` opens at its first job."""
    kinds = {kind.name: kind for kind in job_kinds()}
    lanes: dict[str, _Lane] = {}
    mine = None
    if own is not None:
        mine = lanes[own[0].name] = _Lane(own[0], list(own[1]))
        jobs_take_turn(company_id, own[0].name)
    ran = 0
    with ExitStack() as stack:
        for _ in range(_MAX_PICKS):
            candidates = _candidates(company_id, now, lanes, holder, kinds)
            if not candidates:
                break
            _, _, lane = min(candidates, key=lambda c: (c[0], c[1]))
            made = _serve_lane(lane, company_id, now, stack, own=lane is mine)
            if lane is not mine:
                ran += made
    summary = (
        JobRunSummary(reclaimed=0, retried=mine.retried, waiting=mine.waiting)
        if mine is not None
        else JobRunSummary(reclaimed=0, retried=0, waiting=0)
    )
    return SlotService(own=summary, ran=ran)


def jobs_serve_turns(company_id: int, *, now: datetime, holder: str = "") -> int:
    """Run the due jobs of every job kind waiting for a turn at ``company_id``
    (oldest due first: :func:`jobs_serve_slot`). The caller holds one of the company's LLM
    slots. Returns how many runs were made."""
    return jobs_serve_slot(company_id, now=now, holder=holder).ran


def jobs_wake(*, now: datetime | None = None) -> dict[str, JobDispatch]:
    """The kernel's wake (every 30 s, :data:`~synthorg.jobs.registry.WAKE_SCHEDULES`): for
    every kind kept alive by the kernel (``keep_alive``: the short
    :data:`~synthorg.jobs.registry.JOB_LEASE`),
    reclaim the jobs whose lease lapsed and hand each company with due jobs its task at
    once (:func:`jobs_dispatch`) — a killed worker's job runs again within its lease plus
    30 s, a job whose own task was lost within its grace plus 30 s. A kind that renews its
    own longer lease (fine-tune runs) keeps to its every-minute schedule."""
    dispatched: dict[str, JobDispatch] = {}
    for kind in job_kinds():
        if not kind.keep_alive:
            continue
        try:
            dispatched[kind.name] = jobs_dispatch(kind, now=now, prepare=False)
        except Exception:  # one kind's failure does not hold up the others' wake
            logger.exception("waking %s jobs failed", kind.name)
    return dispatched


def jobs_run_due(
    kind: JobKind, *, now: datetime | None = None, limit: int | None = None
) -> JobRunSummary:
    """Reclaim, then run every company's due jobs of ``kind`` in this process, company by
    company (what the dispatcher's per-company tasks do; tests and commands use it)."""
    now = now or timezone.now()
    if kind.prepare is not None:
        kind.prepare(now, None, limit or kind.batch_size)
    reclaimed = job_reclaim_expired(kind, now=now)
    by_company: dict[int, int] = {}
    for company_id in (
        kind.due_jobs(now)
        .order_by("next_attempt_at", "pk")
        .values_list("company_id", flat=True)[: limit or kind.batch_size]
    ):
        by_company[company_id] = by_company.get(company_id, 0) + 1
    retried = waiting = 0
    for company_id, count in by_company.items():
        summary = jobs_run_company(kind, company_id=company_id, now=now, limit=count)
        retried += summary.retried
        waiting += summary.waiting
    return JobRunSummary(reclaimed=reclaimed, retried=retried, waiting=waiting)
