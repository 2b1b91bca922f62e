"""The durable-job primitive (synthorg.jobs): the claim protocol with its lease, defer, the
one retry policy, re-queue, the append-only history and the dispatcher's fair turns.

A sample job kind on its own tables (created for each test, inside its transaction) stands
for a family, so these tests know nothing of captures or drafts.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from django.db import DatabaseError, connection, models, transaction
from django.test.utils import isolate_apps
from django.utils import timezone

from synthorg.db.append_only import AppendOnly
from synthorg.jobs import registry
from synthorg.jobs.dispatch import COMPANY_TASK, job_run, jobs_run_company, jobs_run_due
from synthorg.jobs.models import DurableJob, JobStatusChange, JobTurn
from synthorg.jobs.policy import DEFAULT_POLICY, RetryPolicy
from synthorg.jobs.registry import JobKind, llm_job_lease
from synthorg.jobs.services import (
    SLOT_DEFER,
    LeaseLost,
    job_claim,
    job_defer,
    job_extend,
    job_fail,
    job_finish,
    job_reclaim_expired,
    job_renew,
    job_requeue,
)
from tests.support.db_roles import owner_cursor
from tests.support.llm_slots import slot_held_elsewhere

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
COMPANY = 7
GAVE_UP = " (gave up after {attempts} attempts)"


@pytest.fixture(scope="module")
def sample(django_db_setup, django_db_blocker):
    """A job model and its history model (append-only), on tables the owner role creates
    for this module (the app role the tests run as may not create tables)."""
    with isolate_apps("synthorg.jobs"):

        class SampleJob(DurableJob):
            company_id = models.BigIntegerField()
            lane = models.CharField(max_length=8, default="a")

            class Meta:
                app_label = "jobs"

        class SampleJobChange(JobStatusChange):
            job = models.ForeignKey(SampleJob, on_delete=models.PROTECT)

            class Meta:
                app_label = "jobs"

        with django_db_blocker.unblock():
            with connection.schema_editor(collect_sql=True, atomic=False) as editor:
                editor.create_model(SampleJob)
                editor.create_model(SampleJobChange)
            tables = [SampleJobChange._meta.db_table, SampleJob._meta.db_table]
            with owner_cursor() as cursor:
                for sql in editor.collected_sql:
                    cursor.execute(sql)
                cursor.execute(AppendOnly(tables[0]).sql)
            try:
                yield SampleJob, SampleJobChange
            finally:
                with owner_cursor() as cursor:
                    for table in tables:
                        cursor.execute(f"DROP TABLE IF EXISTS {table} CASCADE")


class Ran:
    """``run(job, batch)`` of a sample kind: finishes the job and notes its id."""

    def __init__(self) -> None:
        self.ids: list = []

    def __call__(self, job, batch) -> bool:
        self.ids.append(job.pk)
        job_finish(self.kind, job, status="done", method="rule")
        return True


def make_kind(sample, name: str, lane: str) -> JobKind:
    job_model, history_model = sample
    run = Ran()

    def history(job, *, now, reason=None, actor=""):
        history_model.objects.create(
            job_id=job.pk,
            status=job.status,
            method=job.method,
            reason=job.reason if reason is None else reason,
            attempt=job.attempts,
            actor=actor,
            created_at=now,
        )

    kind = JobKind(
        name=name,
        model=job_model,
        history=history,
        run=run,
        policy=RetryPolicy(max_attempts=2),
        lease=lambda: LEASE,
        due=lambda now: job_model.objects.filter(lane=lane, next_attempt_at__lte=now),
    )
    run.kind = kind
    return kind


@pytest.fixture
def kind(sample):
    return make_kind(sample, "sample.a", "a")


def new_job(sample, *, lane="a", status="queued", due=None, attempts=0):
    now = timezone.now()
    return sample[0].objects.create(
        company_id=COMPANY,
        lane=lane,
        status=status,
        attempts=attempts,
        next_attempt_at=due,
        created_at=now,
        updated_at=now,
    )


def state(job) -> tuple:
    job.refresh_from_db()
    return (job.status, job.attempts, job.next_attempt_at, job.claimed_until, job.reason)


def history(sample, job) -> list[tuple]:
    return list(
        sample[1]
        .objects.filter(job_id=job.pk)
        .order_by("id")
        .values_list("status", "attempt", "reason", "actor")
    )


def test_the_retry_policy_doubles_up_to_its_bound_and_gives_up():
    assert [DEFAULT_POLICY.delay(n).total_seconds() for n in (0, 1, 2, 3, 7, 8, 20)] == [
        60,
        60,
        120,
        240,
        3600,
        3600,
        3600,
    ]
    policy = RetryPolicy(base=timedelta(seconds=30), max_delay=timedelta(minutes=2), max_attempts=3)
    now = timezone.now()
    assert [policy.next_attempt(n, now) for n in (1, 2, 3)] == [
        now + timedelta(seconds=30),
        now + timedelta(minutes=1),
        None,
    ]
    assert (DEFAULT_POLICY.max_attempts, DEFAULT_POLICY.gives_up(8)) == (8, True)


def test_two_workers_claim_one_job_and_one_wins(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    first = job_claim(kind, job.pk, now=now)
    second = job_claim(kind, job.pk, now=now)
    assert first is not None and second is None
    assert state(job) == ("running", 1, None, now + LEASE, "")
    assert history(sample, job) == [("running", 1, "", "")]


def test_a_job_whose_lease_ended_is_claimable_again(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    dead_worker = job_claim(kind, job.pk, now=now)

    assert job_reclaim_expired(kind, now=now + LEASE - timedelta(seconds=1)) == 0
    assert job_claim(kind, job.pk, now=now + LEASE) is None  # still leased
    assert job_reclaim_expired(kind, now=now + LEASE + timedelta(seconds=1)) == 1
    reclaimed = "reclaimed: the worker running this job did not finish within its lease (30 s)"
    later = now + LEASE + timedelta(seconds=1)
    assert state(job) == ("queued", 1, later, None, reclaimed)

    live_worker = job_claim(kind, job.pk, now=later)
    assert live_worker is not None and state(job)[:2] == ("running", 2)
    # The dead worker's late outcome is refused: the lease it held was taken over.
    with pytest.raises(LeaseLost):
        job_finish(kind, dead_worker, status="done")
    job_finish(kind, live_worker, status="done", now=later)
    assert state(job) == ("done", 2, None, None, "")
    assert [row[:2] for row in history(sample, job)] == [
        ("running", 1),
        ("queued", 1),
        ("running", 2),
        ("done", 2),
    ]


def test_a_renewal_extends_the_lease_with_the_progress_and_is_fenced(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    worker = job_claim(kind, job.pk, now=now)
    later = now + LEASE - timedelta(seconds=1)
    assert job_renew(kind, worker, now=later, lane="b") is True
    assert state(job) == ("running", 1, None, later + LEASE, "")
    assert (worker.claimed_until, worker.lane, job.lane) == (later + LEASE, "b", "b")
    assert job_renew(kind, worker, lease=timedelta(minutes=5), now=later) is True
    assert state(job)[3] == later + timedelta(minutes=5)
    assert history(sample, job) == [("running", 1, "", "")]  # no transition, no row

    # Reclaimed after the worker went silent: its renewal is refused and saves nothing.
    silent = later + timedelta(minutes=5, seconds=1)
    assert job_reclaim_expired(kind, now=silent) == 1
    assert job_renew(kind, worker, now=silent, lane="c") is False
    assert state(job)[0] == "queued" and job.lane == "b"
    # So is a renewal of a job that left ``running`` (an operator's outcome).
    live = job_claim(kind, job.pk, now=silent)
    job_finish(kind, live, status="done", now=silent)
    assert job_renew(kind, live, now=silent) is False


def test_a_running_row_without_a_lease_is_leased_from_its_last_update(sample, kind):
    stale = new_job(sample, status="running", attempts=1)
    fresh = new_job(sample, status="running", attempts=1)
    now = timezone.now()
    sample[0].objects.filter(pk=stale.pk).update(updated_at=now - LEASE - timedelta(seconds=1))
    assert job_reclaim_expired(kind, now=now) == 1
    assert (state(stale)[0], state(fresh)[0]) == ("queued", "running")


def test_defer_does_not_count_an_attempt(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    claimed = job_claim(kind, job.pk, now=now)
    job_defer(kind, claimed, reason="slots busy", now=now)
    assert state(job) == ("queued", 0, now + SLOT_DEFER, None, "slots busy")
    job.refresh_from_db()
    assert job.completed_at is None
    assert history(sample, job) == [("running", 1, "", ""), ("queued", 0, "slots busy", "")]


def test_a_failure_backs_off_then_gives_up(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    claimed = job_claim(kind, job.pk, now=now)
    assert job_fail(kind, claimed, status="failed", reason="down", now=now, gave_up_suffix=GAVE_UP)
    assert state(job) == ("failed", 1, now + kind.policy.delay(1), None, "down")

    later = now + timedelta(minutes=1)
    assert job_requeue(kind, job.pk, now=later, reason="retry", due=True) is not None
    claimed = job_claim(kind, job.pk, now=later, due_only=True)
    assert claimed.attempts == 2
    retried = job_fail(
        kind, claimed, status="failed", reason="down", now=later, gave_up_suffix=GAVE_UP
    )
    assert not retried
    assert state(job) == ("failed", 2, None, None, "down (gave up after 2 attempts)")
    assert [row[:2] for row in history(sample, job)] == [
        ("running", 1),
        ("failed", 1),
        ("queued", 1),
        ("running", 2),
        ("failed", 2),
    ]


def test_a_requeue_is_recorded_with_its_actor_and_starts_attempts_again(sample, kind):
    job = new_job(sample, status="failed", attempts=2)
    running = new_job(sample, status="running", attempts=1)
    now = timezone.now()
    assert job_requeue(kind, running.pk, now=now, reason="no", actor="user:1") is None
    requeued = job_requeue(kind, job.pk, now=now, reason="re-queued", actor="user:1", reset=True)
    assert requeued is not None
    assert state(job) == ("queued", 0, None, None, "")
    assert history(sample, job) == [("queued", 0, "re-queued", "user:1")]
    assert history(sample, running) == []
    assert job_requeue(kind, job.pk, now=now, reason="again") is None  # already queued


def test_the_history_is_append_only(sample, kind):
    job = new_job(sample)
    job_claim(kind, job.pk)
    table = sample[1]._meta.db_table
    for sql in (f"UPDATE {table} SET status = 'done'", f"DELETE FROM {table}"):
        with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as c:
            c.execute(sql)
        assert isinstance(error.value.__cause__, psycopg.errors.RaiseException)
        assert "append-only" in str(error.value)
    assert history(sample, job) == [("running", 1, "", "")]


def test_a_busy_kind_waits_for_its_turn_and_the_slot_holder_serves_it(sample, kind, monkeypatch):
    other = make_kind(sample, "sample.b", "b")
    monkeypatch.setitem(registry._kinds, kind.name, kind)
    monkeypatch.setitem(registry._kinds, other.name, other)
    now = timezone.now()
    a_job = new_job(sample, lane="a", due=now)
    b_job = new_job(sample, lane="b", due=now)

    with slot_held_elsewhere(COMPANY):
        summary = jobs_run_company(kind, company_id=COMPANY, now=now)
    assert (summary.busy, summary.retried, summary.waiting) == (True, 0, 1)
    assert state(a_job)[:2] == ("queued", 0)  # not claimed, not charged
    assert list(JobTurn.objects.values_list("company_id", "kind")) == [(COMPANY, "sample.a")]

    # The other kind gets the slot: it runs its own job, then serves the waiting kind's.
    summary = jobs_run_company(other, company_id=COMPANY, now=now)
    assert (summary.busy, summary.retried, summary.waiting) == (False, 1, 0)
    assert (other.run.ids, kind.run.ids) == ([b_job.pk], [a_job.pk])
    assert (state(a_job)[:2], state(b_job)[:2]) == (("done", 1), ("done", 1))
    assert not JobTurn.objects.exists()


# --- what the webhook and re-embedding kinds added (issue 34) ---------------------------------


def test_a_policy_may_grow_by_another_factor():
    policy = RetryPolicy(base=timedelta(seconds=30), factor=4, max_attempts=5)
    assert [policy.delay(n).total_seconds() for n in (1, 2, 3, 4, 5)] == [
        30,
        120,
        480,
        1920,
        3600,  # max_delay
    ]


def test_a_long_run_renews_its_lease_until_it_is_taken_over(sample, kind):
    job = new_job(sample)
    now = timezone.now()
    worker = job_claim(kind, job.pk, now=now)
    job_extend(kind, worker, now=now + timedelta(seconds=20))
    assert state(job)[3] == now + timedelta(seconds=20) + LEASE
    # not reclaimed at the first lease's end: the renewal holds
    assert job_reclaim_expired(kind, now=now + LEASE + timedelta(seconds=1)) == 0
    later = now + timedelta(seconds=20) + LEASE + timedelta(seconds=1)
    assert job_reclaim_expired(kind, now=later) == 1
    job.refresh_from_db()
    assert (job.status, job.completed_at) == ("queued", None)  # due again, not completed
    with pytest.raises(LeaseLost):
        job_extend(kind, worker, now=later)


def test_a_kind_without_llm_slots_runs_while_they_are_taken_and_honours_its_grace(sample):
    """``llm_slots=False``: the company's batch runs with every LLM slot held elsewhere;
    ``grace``: a job is the dispatcher's only once it is overdue by it."""
    from dataclasses import replace

    plain = replace(
        make_kind(sample, "sample.plain", "p"), llm_slots=False, grace=timedelta(seconds=60)
    )
    plain.run.kind = plain
    now = timezone.now()
    overdue = new_job(sample, lane="p", due=now - timedelta(seconds=61))
    recent = new_job(sample, lane="p", due=now - timedelta(seconds=59))
    with slot_held_elsewhere(COMPANY):
        summary = jobs_run_company(plain, company_id=COMPANY, now=now)
    assert (summary.retried, summary.busy) == (1, False)
    assert (state(overdue)[0], state(recent)[0]) == ("done", "queued")
    assert not JobTurn.objects.filter(kind="sample.plain").exists()


def test_the_job_of_a_killed_worker_runs_again_at_the_first_dispatch_after_its_short_lease(
    sample,
):
    """kill -9 of the q2 cluster running a job: nothing renews its lease any more, so the
    first dispatch after ``JOB_LEASE`` (20 s, not the LLM client's timeout plus a margin,
    150 s) reclaims the job and runs it to completion: the next wake, not 900 s."""
    llm = replace(make_kind(sample, "sample.llm", "l"), lease=llm_job_lease)
    llm.run.kind = llm
    job = new_job(sample, lane="l", due=timezone.now())
    claimed_at = timezone.now()
    assert job_claim(llm, job.pk, now=claimed_at, due_only=True) is not None  # then it dies

    tick = claimed_at + timedelta(seconds=21)  # a dispatch once the 20 s lease has passed
    summary = jobs_run_due(llm, now=tick)

    assert (summary.reclaimed, summary.retried) == (1, 1)
    assert state(job)[:2] == ("done", 2)
    assert [row[:2] for row in history(sample, job)] == [
        ("running", 1),
        ("queued", 1),
        ("running", 2),
        ("done", 2),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_keeper_renews_a_running_jobs_lease_and_its_run_still_finishes(sample):
    """While ``run`` works, the keeper thread renews the lease (the job is not reclaimed at
    the end of the lease it was claimed with), and the run's own outcome, fenced by the lease
    it now holds, is recorded — with no history row per renewal."""
    lease = timedelta(seconds=3)
    kept = replace(make_kind(sample, "sample.kept", "k"), lease=lambda: lease)
    renewed = []

    def run(job, batch) -> bool:
        claimed_until = job.claimed_until
        for _ in range(600):  # poll for the keeper's beat (every lease / 3), bounded
            current = type(job).objects.values_list("claimed_until", flat=True).get(pk=job.pk)
            if current > claimed_until:
                renewed.append(current)
                break
            time.sleep(0.05)
        # at the end of the lease it was claimed with, the job is still this worker's
        renewed.append(job_reclaim_expired(kept, now=claimed_until + timedelta(milliseconds=1)))
        job_finish(kept, job, status="done", method="rule")
        return True

    kept = replace(kept, run=run)
    job = new_job(sample, lane="k", due=timezone.now())
    ran = job_run(kept, job.pk)

    assert ran is not None and len(renewed) == 2 and renewed[1] == 0
    assert state(job)[:4] == ("done", 1, None, None)
    assert [row[:2] for row in history(sample, job)] == [("running", 1), ("done", 1)]


def test_the_kernel_records_a_run_that_raises_and_a_run_that_lost_its_lease(sample):
    def boom(job, batch):
        raise RuntimeError("the run broke")

    crashing = replace(make_kind(sample, "sample.crash", "c"), run=boom, crashed_status="failed")
    job = new_job(sample, lane="c", due=timezone.now())
    assert job_run(crashing, job.pk) is not None
    assert state(job)[:2] == ("failed", 1)
    assert state(job)[4] == "internal error: RuntimeError: the run broke"

    def overran(job, batch):
        job_reclaim_expired(crashing, now=job.claimed_until + timedelta(seconds=1))
        job_finish(crashing, job, status="done")  # the worker's late outcome is refused

    lost = replace(crashing, run=overran)
    other = new_job(sample, lane="c", due=timezone.now())
    assert job_run(lost, other.pk) is not None
    assert state(other)[0] == "queued"  # reclaimed: a later run records it


def test_a_kind_needs_one_run_function_and_one_registration(sample, monkeypatch):
    """A kind registered with no task, schedule or slot code of its own: the kernel declares
    its every-minute dispatch, its own task runs a job under one of the company's LLM slots
    (deferred — not charged — and waiting for its turn while every slot is taken), and the
    dispatch hands the company the kernel's batch task."""
    from django_q.models import OrmQ, Schedule

    from synthorg import schedules
    from synthorg.jobs.dispatch import SLOT_DEFERRED
    from synthorg.jobs.registry import DISPATCH_TASK, register_job_kind
    from synthorg.jobs.tasks import job_run_task, jobs_company, jobs_dispatch_kind
    from synthorg.llm.slots import company_llm_concurrency

    monkeypatch.setattr(registry, "_kinds", dict(registry._kinds))
    monkeypatch.setattr(schedules, "_static", dict(schedules._static))
    summary = replace(make_kind(sample, "sample.summary", "s"), slot_per_run=True)
    summary.run.kind = summary
    register_job_kind(summary)
    assert schedules.declared_schedules()["jobs-sample.summary"] == schedules.ScheduleSpec(
        name="jobs-sample.summary",
        func=DISPATCH_TASK,
        schedule_type=Schedule.MINUTES,
        minutes=1,
        args=("sample.summary",),
        cluster=schedules.LLM_CLUSTER,
    )

    job = new_job(sample, lane="s", due=timezone.now())
    with slot_held_elsewhere(COMPANY):
        assert job_run_task("sample.summary", str(job.pk)) == "queued"
    deferred = SLOT_DEFERRED.format(limit=company_llm_concurrency())
    status, attempts, due, claimed_until, reason = state(job)
    assert (status, attempts, claimed_until, reason) == ("queued", 0, None, deferred)
    assert JobTurn.objects.filter(company_id=COMPANY, kind="sample.summary").exists()

    later = due + timedelta(seconds=1)
    assert jobs_dispatch_kind("sample.summary", now=later) == {
        "reclaimed": 0,
        "companies": [COMPANY],
    }
    [queued] = OrmQ.objects.all()
    assert (queued.task["func"], queued.task["args"]) == (COMPANY_TASK, ("sample.summary", COMPANY))
    assert queued.key == schedules.LLM_CLUSTER
    assert jobs_company("sample.summary", COMPANY, now=later)["retried"] == 1
    assert state(job)[:2] == ("done", 1)
    assert not JobTurn.objects.filter(company_id=COMPANY, kind="sample.summary").exists()


# --- recovery a user can see (issue 34): the wake, fair turns across kinds ---------------------


def test_the_wake_is_two_minute_schedules_half_a_minute_apart(monkeypatch):
    """``jobs-wake`` at second 0 and ``jobs-wake-half`` at second 30 of every minute, on the
    default cluster: the kernel wakes every 30 s (q2 moves a run on from the last one's
    time, so each row keeps its second)."""
    from django_q.models import Schedule

    from synthorg import schedules
    from synthorg.jobs.registry import WAKE_TASK

    declared = schedules.declared_schedules()
    assert [
        (declared[name].func, declared[name].minutes, declared[name].cluster, declared[name].offset)
        for name in ("jobs-wake", "jobs-wake-half")
    ] == [(WAKE_TASK, 1, None, 0), (WAKE_TASK, 1, None, 30)]

    monkeypatch.setattr(
        schedules, "_static", {n: declared[n] for n in ("jobs-wake", "jobs-wake-half")}
    )
    monkeypatch.setattr(schedules, "_providers", [])
    schedules.sync_schedules()
    rows = {s.name: s for s in Schedule.objects.filter(name__startswith="synthorg:jobs-wake")}
    assert sorted((name, row.next_run.second) for name, row in rows.items()) == [
        ("synthorg:jobs-wake", 0),
        ("synthorg:jobs-wake-half", 30),
    ]
    # a row moved off its second (by hand, an older release) is put back on it
    Schedule.objects.filter(name="synthorg:jobs-wake-half").update(
        next_run=rows["synthorg:jobs-wake-half"].next_run.replace(second=7)
    )
    assert schedules.sync_schedules().updated == ("synthorg:jobs-wake-half",)
    assert Schedule.objects.get(name="synthorg:jobs-wake-half").next_run.second == 30
    assert schedules.sync_schedules().updated == ()


def test_the_wake_reclaims_a_lapsed_lease_and_hands_the_company_its_task_at_once(
    sample, monkeypatch
):
    """A worker killed while it held a job: the first wake after the 20 s lease reclaims the
    job and enqueues the company's task — not the kind's next minute tick. A kind that keeps
    its own long lease (``keep_alive`` off) is left to its own schedule (not in the wake's
    answer)."""
    from django_q.models import OrmQ

    from synthorg.jobs.tasks import jobs_wake_task

    llm = replace(make_kind(sample, "sample.llm", "l"), lease=llm_job_lease)
    own_lease = replace(make_kind(sample, "sample.own", "o"), keep_alive=False)
    monkeypatch.setattr(registry, "_kinds", {llm.name: llm, own_lease.name: own_lease})
    job = new_job(sample, lane="l", due=timezone.now())
    held = new_job(sample, lane="o", due=timezone.now())
    claimed_at = timezone.now()
    assert job_claim(llm, job.pk, now=claimed_at, due_only=True) is not None  # then it dies
    assert job_claim(own_lease, held.pk, now=claimed_at) is not None  # its 30 s lease holds

    assert jobs_wake_task(now=claimed_at + timedelta(seconds=19)) == {
        "sample.llm": {"reclaimed": 0, "companies": []}
    }
    assert jobs_wake_task(now=claimed_at + timedelta(seconds=21)) == {
        "sample.llm": {"reclaimed": 1, "companies": [COMPANY]}
    }
    [queued] = OrmQ.objects.all()
    assert (queued.task["func"], queued.task["args"]) == (COMPANY_TASK, ("sample.llm", COMPANY))
    assert (state(job)[0], state(held)[0]) == ("queued", "running")


def test_a_slot_holder_serves_every_waiting_kind_oldest_due_first(sample, monkeypatch):
    """The holder's own batch does not go ahead of older work that waited for its turn: one
    job at a time, oldest due first across the kinds waiting at the company."""
    order: list[str] = []

    def runner(kind_name):
        def run(job, batch):
            order.append(f"{kind_name}:{job.next_due}")
            job_finish(kinds[kind_name], job, status="done", method="rule")
            return True

        return run

    kinds = {}
    for name, lane in (("sample.a", "a"), ("sample.b", "b")):
        kinds[name] = replace(make_kind(sample, name, lane), run=runner(name))
    monkeypatch.setattr(registry, "_kinds", dict(kinds))
    now = timezone.now()
    jobs = {}
    for lane, ago in (("a", 50), ("a", 10), ("a", 1), ("b", 40), ("b", 5)):
        job = new_job(sample, lane=lane, due=now - timedelta(seconds=ago))
        jobs[job.pk] = f"-{ago}"
    original_claim = job_claim

    def labelled(kind, pk, **kwargs):
        job = original_claim(kind, pk, **kwargs)
        if job is not None:
            job.next_due = jobs[job.pk]
        return job

    monkeypatch.setattr("synthorg.jobs.dispatch.job_claim", labelled)

    with slot_held_elsewhere(COMPANY):  # b finds the slot busy and waits
        assert jobs_run_company(kinds["sample.b"], company_id=COMPANY, now=now).busy

    summary = jobs_run_company(kinds["sample.a"], company_id=COMPANY, now=now)

    assert order == [
        "sample.a:-50",
        "sample.b:-40",
        "sample.a:-10",
        "sample.b:-5",
        "sample.a:-1",
    ]
    assert (summary.retried, summary.waiting, summary.busy) == (3, 0, False)
    assert not JobTurn.objects.exists()
