"""The job kinds registry: each app registers its durable job kinds in ``AppConfig.ready``.

A kind names its model (a :class:`~synthorg.jobs.models.DurableJob`), how to append to its
history, its statuses, its retry policy and lease, and the one function that does the work,
``run(job, batch)``. The kernel's claim protocol, dispatcher and re-queue do the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from synthorg.jobs.models import DurableJob
from synthorg.jobs.policy import DEFAULT_POLICY, RetryPolicy
from synthorg.schedules import LLM_CLUSTER, ScheduleSpec, register_schedule

#: The kernel's dispatch task of a kind: its every-minute schedule ``jobs-<name>``.
DISPATCH_TASK = "synthorg.jobs.tasks.jobs_dispatch_kind"

#: The kernel's wake (every 30 s: :data:`WAKE_SCHEDULES`): reclaim lapsed leases and dispatch
#: the due jobs of every kind kept alive by the kernel (:func:`synthorg.jobs.dispatch.jobs_wake`).
WAKE_TASK = "synthorg.jobs.tasks.jobs_wake_task"
#: Two every-minute schedules half a minute apart: a tick every 30 s.
WAKE_SCHEDULES = (("jobs-wake", 0), ("jobs-wake-half", 30))

#: The lease of a job whose worker keeps it alive: a keeper thread renews it every third of
#: it while the run lasts (:func:`synthorg.jobs.services.job_execute`), so a live worker holds
#: its job however long its LLM call takes, and a killed one (kill -9 of its q2 cluster)
#: gives it up within this lease; the kernel's wake (every 30 s) reclaims and runs it, so
#: it runs again within lease + 30 s of the kill (was 30 s + a minute's tick).
JOB_LEASE = timedelta(seconds=20)
#: How long a worker may take beyond the LLM client's own total timeout before work that
#: renews its lease only between LLM calls (not kept alive) is taken for orphaned.
LEASE_MARGIN = timedelta(seconds=30)


def llm_job_lease() -> timedelta:
    """The lease of a job kept alive while it runs: :data:`JOB_LEASE`."""
    return JOB_LEASE


def llm_call_lease() -> timedelta:
    """A lease renewed only between LLM calls: the client's total timeout
    (``SYNTHORG_LLM['TOTAL_TIMEOUT']``, 120 s by default) plus :data:`LEASE_MARGIN`."""
    conf = getattr(settings, "SYNTHORG_LLM", {}) or {}
    total = float(conf.get("TOTAL_TIMEOUT") or 120.0)
    return timedelta(seconds=total) + LEASE_MARGIN


def _no_batch(company_id: int, now: datetime) -> AbstractContextManager[Any]:
    return nullcontext()


@dataclass(frozen=True)
class JobKind:
    """One kind of durable job.

    ``run(job, batch)`` does the work of one claimed job (status ``running``, its attempt
    counted) and records the outcome with :func:`~synthorg.jobs.services.job_finish` /
    :func:`~synthorg.jobs.services.job_fail` / :func:`~synthorg.jobs.services.job_defer`;
    it returns ``False`` when the LLM endpoint itself failed (an outage: the company's batch
    stops, the others keep their due time uncharged). ``batch(company_id, now)`` is an
    optional context manager around one company's batch (what its jobs share: a plan, a
    provider, a run report); ``run`` receives what it yields (``None`` by default).

    ``llm_slots=False``: the kind is not LLM work (a webhook POST, a re-embedding batch): its
    company tasks run on the default q2 cluster and take none of the company's LLM slots
    (no turns either), still one task per company so one company's dead endpoint holds up
    only its own task.

    The console's failures page lists, for every kind, the jobs in ``failed_statuses``
    (``label``, ``describe(job)`` and ``detail_url(job)`` say what each is) and re-queues
    one with ``requeue(principal=..., job_id=...)`` — by default
    :func:`persistence.services.jobs.job_operator_requeue`, which audits
    ``<target_type>.requeued`` and hands the job to ``enqueue(pk)`` after commit.
    """

    name: str  # unique, e.g. "procedural.capture"
    model: type[DurableJob]  # the DurableJob subclass
    history: Callable[..., Any]  # history(job, now=..., reason=None, actor="") appends a row
    run: Callable[[Any, Any], bool | None]
    queued: str = "queued"  # the claimable status
    running: str = "running"
    policy: RetryPolicy = DEFAULT_POLICY
    lease: Callable[[], timedelta] = llm_job_lease
    #: the due jobs (``next_attempt_at <= now``) as a queryset; a kind narrows it (e.g. a job
    #: that waits for an LLM to be configured)
    due: Callable[[datetime], Any] | None = None
    batch: Callable[[int, datetime], AbstractContextManager[Any]] = _no_batch
    #: makes jobs of what became due before the dispatcher looks for due jobs (extraction:
    #: the runs of conversations whose own task was lost): ``prepare(now, company_id,
    #: limit)`` — by the kind's schedule (``company_id`` None, ``limit`` None) and by a
    #: company's batch (not by the wake, nor by a turn another kind serves)
    prepare: Callable[[datetime, int | None, int | None], None] | None = None
    #: what a company's batch does without the LLM while every slot is taken and its jobs
    #: wait for their turn: ``while_busy(company_id, now, limit)`` (extraction stores turns)
    while_busy: Callable[[int, datetime, int], None] | None = None
    #: moves a due job that is not queued (failed, reclaimed) back to queued before a
    #: company's batch claims it: ``resume(pk, now)``, ``True`` when it did. A kind may refuse
    #: under a policy of its own and record why (fine-tune runs: the company's
    #: ``max_auto_resumes``, audited). ``None``: a plain ``job_requeue`` (history ``retry``)
    resume: Callable[[Any, datetime], bool] | None = None
    batch_size: int = 50
    select_related: tuple[str, ...] = ()  # what ``run`` reads through the job's relations
    reclaimed_reason: str = (
        "reclaimed: the worker running this job did not finish within its lease ({seconds} s)"
    )
    #: the status a reclaimed job gets (due at once); ``None``: the kind's ``queued``
    reclaimed_status: str | None = None
    #: whether a run takes one of the company's LLM slots (and runs on the LLM cluster)
    llm_slots: bool = True
    #: whether the kernel holds one of the company's LLM slots around every run (a job's own
    #: task too: with every slot taken the job is deferred, not charged, and waits for its
    #: turn); off for a kind that asks for a slot only when it calls the LLM
    slot_per_run: bool = False
    #: whether a keeper thread renews the lease while ``run`` works (off for a kind that
    #: renews its own, longer lease step by step)
    keep_alive: bool = True
    #: the status of a job whose ``run`` raised (recorded ``internal error: …``); ``None``:
    #: the exception propagates (to the kind's ``batch``) and the lease reclaims the job
    crashed_status: str | None = None
    #: how long past ``next_attempt_at`` a job is left to the task enqueued for it (on commit,
    #: at its retry time) before the dispatcher takes it; a reclaimed job is due at once
    grace: timedelta = timedelta(0)
    # --- the failures page ---
    label: str = ""  # what the console calls a job of this kind, e.g. "Lesson capture"
    failed_statuses: tuple[str, ...] = ()  # failed or given up: listed and re-queueable
    describe: Callable[[Any], str] | None = None  # one line naming the job's subject
    detail_url: Callable[[Any], str] | None = None  # the family's own page for the job
    target_type: str = ""  # the audit target (``<target_type>.requeued``); default the name
    #: the operator's re-queue: ``requeue(principal=..., job_id=...)``; None: the default one
    requeue: Callable[..., Any] | None = None
    #: hands one job to a worker now (called after a re-queue commits)
    enqueue: Callable[[Any], None] | None = None

    def due_jobs(self, now: datetime):
        """The jobs due for the dispatcher at ``now`` (``next_attempt_at`` ≤ now − grace)."""
        cutoff = now - self.grace
        if self.due is not None:
            return self.due(cutoff)
        return self.model._default_manager.filter(next_attempt_at__lte=cutoff)

    @property
    def title(self) -> str:
        return self.label or self.name

    def objects(self):
        return self.model._default_manager.select_related(*self.select_related)


_kinds: dict[str, JobKind] = {}


def register_job_kind(kind: JobKind) -> None:
    """Register ``kind`` with its every-minute dispatch schedule (``jobs-<name>``, on the
    LLM cluster for LLM work)."""
    from django_q.models import Schedule

    _kinds[kind.name] = kind
    register_schedule(
        ScheduleSpec(
            name=schedule_name(kind.name),
            func=DISPATCH_TASK,
            schedule_type=Schedule.MINUTES,
            minutes=1,
            args=(kind.name,),
            cluster=LLM_CLUSTER if kind.llm_slots else None,
        )
    )


def schedule_name(kind_name: str) -> str:
    """The kind's every-minute dispatch schedule (stored with the ``synthorg:`` prefix)."""
    return f"jobs-{kind_name}"


def register_wake_schedules() -> None:
    """The kernel's wake: ``jobs-wake`` at every minute and ``jobs-wake-half`` 30 s later,
    on the default cluster (a dead or busy LLM cluster does not stop the reclaiming; the
    company tasks it hands out wait for the LLM cluster's next worker)."""
    from django_q.models import Schedule

    for name, offset in WAKE_SCHEDULES:
        register_schedule(
            ScheduleSpec(
                name=name,
                func=WAKE_TASK,
                schedule_type=Schedule.MINUTES,
                minutes=1,
                offset=offset,
            )
        )


def job_kind(name: str) -> JobKind:
    return _kinds[name]


def job_kinds() -> Iterable[JobKind]:
    return tuple(_kinds.values())
