"""Fine-tune runs are durable jobs (synthorg.jobs): a task claims the run under a lease that
every sign of life renews; a worker that dies leaves a ``running`` run whose lease passes,
the kernel's every-minute schedule reclaims it and its company's task resumes it — as the
kernel's retry policy allows (``max_auto_resumes + 1`` attempts), each audited — then
fails it with the reason. A worker whose run was reclaimed meanwhile stops at its next
renewal; every transition is an append-only history row."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from memory.finetune.models import AdapterCheckpoint, FineTuneRun, FineTuneRunStatusChange
from memory.finetune.services import (
    AUTO_RESUME_EXHAUSTED,
    AUTO_RESUMED,
    FINE_TUNE_JOB,
    FineTunePlan,
    fine_tune_auto_resume,
    fine_tune_execute,
    fine_tune_resume,
    fine_tune_start,
)
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.jobs.dispatch import COMPANY_TASK, JobDispatch, jobs_dispatch
from synthorg.jobs.registry import DISPATCH_TASK, job_kind
from synthorg.jobs.services import job_claim
from synthorg.jobs.tasks import jobs_company
from synthorg.schedules import declared_schedules, sync_schedules
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)
PAIRS = 120
RECLAIMED = "reclaimed: the worker running this run showed no sign of life within its lease (120 s)"


class WorkerKilled(BaseException):
    """What a killed worker process looks like from the run's row: nothing is recorded (not
    an ``Exception``, so the run is not marked failed) and its lease is not renewed."""


@pytest.fixture
def crashed(tmp_path, settings):
    """A run left ``running`` after 3 saved epochs by a worker that died."""
    company = CompanyFactory()
    docs, queries = crafted(PAIRS)
    store_pairs(AgentFactory(company=company), docs)
    enable(company, tmp_path, settings, max_auto_resumes=2)
    admin = MembershipFactory(company=company, role="admin")
    principal = Principal.for_human(admin.user, company, "admin")
    run = fine_tune_start(company=company, plan=FineTunePlan(), principal=principal)
    embedder = QueryEmbedder(queries, docs)

    def die(row):
        if row.epochs_done == 3:
            raise WorkerKilled

    with pytest.raises(WorkerKilled):
        fine_tune_execute(run.pk, embedder=embedder, on_epoch=die)
    OrmQ.objects.all().delete()
    run.refresh_from_db()
    assert (run.status, run.epochs_done, run.attempts) == ("running", 3, 1)
    # The last sign of life is the third epoch's save: the company's lease (2 min) from it.
    assert run.claimed_until == run.updated_at + timedelta(minutes=2)
    return run, embedder, principal


def history(run) -> list[tuple[str, str, int, str]]:
    return list(
        FineTuneRunStatusChange.objects.filter(run=run)
        .order_by("id")
        .values_list("status", "reason", "attempt", "actor")
    )


def queued() -> list[tuple[str, tuple]]:
    return [(task.func(), tuple(task.args())) for task in OrmQ.objects.order_by("id")]


def revive(now) -> list[tuple]:
    """What the kernel does at ``now`` before a company's task claims a run: its schedule
    reclaims the runs whose lease passed, the company's task resumes each due ``failed`` one
    (the kind's ``resume``). ``(run pk, resumed?)`` per due run."""
    jobs_dispatch(FINE_TUNE_JOB, now=now)
    due = FineTuneRun.objects.filter(status="failed", next_attempt_at__lte=now)
    return [(pk, fine_tune_auto_resume(pk, now)) for pk in due.values_list("pk", flat=True)]


def test_the_kind_is_registered():
    assert job_kind("finetune.run") is FINE_TUNE_JOB
    assert (FINE_TUNE_JOB.queued, FINE_TUNE_JOB.running) == ("planned", "running")
    assert (FINE_TUNE_JOB.resume, FINE_TUNE_JOB.llm_slots) == (fine_tune_auto_resume, False)


def test_a_run_whose_lease_passed_is_reclaimed_queued_and_finishes(crashed):
    run, embedder, principal = crashed
    lease_end = run.claimed_until
    # The worker may be alive until its lease ends: nothing is touched, nobody may claim it.
    assert jobs_dispatch(FINE_TUNE_JOB, now=lease_end - timedelta(seconds=1)) == JobDispatch(
        reclaimed=0, companies=()
    )
    assert queued() == [] and job_claim(FINE_TUNE_JOB, run.pk) is None

    later = lease_end + timedelta(seconds=1)
    assert jobs_dispatch(FINE_TUNE_JOB, now=later) == JobDispatch(
        reclaimed=1, companies=(run.company_id,)
    )
    assert queued() == [(COMPANY_TASK, ("finetune.run", run.company_id))]
    # The company's task resumes it (the kind's resume), then claims it.
    assert fine_tune_auto_resume(run.pk, later) is True
    revived = FineTuneRun.objects.get(pk=run.pk)
    assert (revived.status, revived.attempts, revived.epochs_done) == ("planned", 1, 3)
    assert (revived.claimed_until, revived.completed_at) == (None, None)
    assert revived.next_attempt_at == later  # due: claimed by the same task
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resumed")
    assert (entry.target_id, entry.actor_user_id, entry.actor_agent_id) == (str(run.pk), None, None)
    assert entry.details == {"epochs_done": 3, "attempts": 1, "max_auto_resumes": 2}
    # Resumed once: a second company task finds it planned and leaves it to the claim.
    assert fine_tune_auto_resume(run.pk, later + timedelta(minutes=1)) is False
    assert AuditEntry.objects.filter(action_type__startswith="memory.fine_tune.auto").count() == 1

    # Claimed, it continues from the saved epoch.
    assert fine_tune_execute(run.pk, embedder=embedder) == "promoted"
    done = FineTuneRun.objects.get(pk=run.pk)
    assert (done.epochs_done, done.attempts, done.next_attempt_at) == (10, 2, None)
    assert AdapterCheckpoint.objects.get(run=run).is_active
    statuses = [row[0] for row in history(run)]
    assert statuses[:5] == ["planned", "running", "failed", "planned", "running"]
    assert statuses[-2:] == ["running", "promoted"]
    assert history(run)[2][1:] == (RECLAIMED, 1, "")
    assert history(run)[3][1:] == (AUTO_RESUMED, 1, "")
    assert history(run)[0][3] == f"user:{principal.user.pk}"


def test_the_kernel_s_company_task_resumes_a_lapsed_run_with_its_audit_row(crashed):
    """The recovery through the kernel alone: its schedule reclaims the run whose worker
    died, the company's task (``jobs_company``) resumes it — audited — claims it and trains
    on from the saved epoch (with the company's own embedder, the default one)."""
    run, _embedder, _principal = crashed
    later = run.claimed_until + timedelta(seconds=1)
    assert jobs_dispatch(FINE_TUNE_JOB, now=later).companies == (run.company_id,)
    assert jobs_company("finetune.run", run.company_id, now=later) == {
        "reclaimed": 0, "retried": 1, "waiting": 0, "busy": False,
    }  # fmt: skip
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resumed")
    assert (entry.target_id, entry.details) == (
        str(run.pk), {"epochs_done": 3, "attempts": 1, "max_auto_resumes": 2},
    )  # fmt: skip
    done = FineTuneRun.objects.get(pk=run.pk)
    assert (done.status, done.epochs_done, done.attempts, done.next_attempt_at) == (
        "not_promoted", 10, 2, None,
    )  # fmt: skip
    assert history(run)[:5] == [
        ("planned", "", 0, f"user:{_principal.user.pk}"),
        ("running", "", 1, ""),
        ("failed", RECLAIMED, 1, ""),
        ("planned", AUTO_RESUMED, 1, ""),
        ("running", "", 2, ""),
    ]
    # Nothing is due any more: the next tick hands out no task.
    assert jobs_dispatch(FINE_TUNE_JOB, now=later + timedelta(minutes=1)).companies == ()


def test_a_worker_whose_run_was_reclaimed_stops_at_its_next_renewal(crashed):
    """The worker was only slow (paused past its lease): the run was reclaimed and finished
    by another; the slow one's writes are refused and it returns the run's status."""
    run, embedder, _principal = crashed
    assert revive(run.claimed_until + timedelta(seconds=1)) == [(run.pk, True)]
    paused, release = threading.Event(), threading.Event()
    outcome = {}

    def pause_once(row):
        if not paused.is_set():
            paused.set()
            release.wait(timeout=60)

    def slow_worker():
        try:
            outcome["status"] = fine_tune_execute(run.pk, embedder=embedder, on_epoch=pause_once)
        finally:
            connection.close()

    thread = threading.Thread(target=slow_worker)
    thread.start()
    try:
        assert paused.wait(timeout=60)
        slow = FineTuneRun.objects.get(pk=run.pk)
        assert (slow.status, slow.epochs_done) == ("running", 4)
        assert revive(slow.claimed_until + timedelta(seconds=1)) == [(run.pk, True)]
        assert fine_tune_execute(run.pk, embedder=embedder) == "promoted"
    finally:
        release.set()
        thread.join(timeout=60)
    assert outcome["status"] == "promoted"
    assert FineTuneRun.objects.get(pk=run.pk).epochs_done == 10
    assert AdapterCheckpoint.objects.filter(run=run).count() == 1


def test_attempts_are_bounded_by_the_retry_policy_then_the_run_fails(crashed):
    run, _embedder, principal = crashed
    now = run.claimed_until
    for attempt in (1, 2):
        now += timedelta(seconds=1)
        assert revive(now) == [(run.pk, True)]
        assert FineTuneRun.objects.get(pk=run.pk).attempts == attempt
        # A worker claims it and dies too.
        claimed = job_claim(FINE_TUNE_JOB, run.pk, now=now)
        assert claimed.attempts == attempt + 1
        now = claimed.claimed_until
    now += timedelta(seconds=1)
    assert revive(now) == [(run.pk, False)]
    failed = FineTuneRun.objects.get(pk=run.pk)
    assert (failed.status, failed.completed_at, failed.epochs_done) == ("failed", now, 3)
    assert failed.next_attempt_at is None
    assert failed.reason == AUTO_RESUME_EXHAUSTED.format(attempts=3, minutes=2, max=2)
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resume_exhausted")
    assert (entry.details["attempts"], entry.details["max_auto_resumes"]) == (3, 2)
    OrmQ.objects.all().delete()
    assert revive(now + timedelta(hours=1)) == []
    assert queued() == []  # nothing queued for a run given up on

    # Resumed by hand: the attempts start over, the history names the admin.
    fine_tune_resume(company=run.company, run_id=run.pk, principal=principal)
    resumed = FineTuneRun.objects.get(pk=run.pk)
    assert (resumed.status, resumed.attempts, resumed.reason) == ("planned", 0, "")
    assert history(run)[-1] == ("planned", "resumed by hand from failed", 0,
                                f"user:{principal.user.pk}")  # fmt: skip


def test_max_auto_resumes_zero_fails_at_once_and_the_lease_is_the_companys(
    crashed, tmp_path, settings
):
    run, embedder, principal = crashed
    enable(run.company, tmp_path, settings, max_auto_resumes=0, auto_resume_after_minutes=1)
    exhausted = AUTO_RESUME_EXHAUSTED.format(attempts=1, minutes=1, max=0)
    assert revive(run.claimed_until + timedelta(seconds=1)) == [(run.pk, False)]
    assert FineTuneRun.objects.get(pk=run.pk).reason == exhausted

    # Resumed by hand, claimed again: the lease is the company's minute now.
    fine_tune_resume(company=run.company, run_id=run.pk, principal=principal)

    def die(row):
        raise WorkerKilled

    with pytest.raises(WorkerKilled):
        fine_tune_execute(run.pk, embedder=embedder, on_epoch=die)
    dead = FineTuneRun.objects.get(pk=run.pk)
    assert (dead.status, dead.attempts) == ("running", 1)
    assert dead.claimed_until == dead.updated_at + timedelta(minutes=1)
    assert revive(dead.claimed_until - timedelta(seconds=1)) == []
    assert revive(dead.claimed_until + timedelta(seconds=1)) == [(run.pk, False)]
    assert FineTuneRun.objects.get(pk=run.pk).reason == exhausted


def test_a_planned_run_whose_task_was_lost_is_queued_again(tmp_path, settings):
    company = CompanyFactory()
    store_pairs(AgentFactory(company=company), crafted(PAIRS)[0])
    enable(company, tmp_path, settings)
    admin = MembershipFactory(company=company, role="admin")
    principal = Principal.for_human(admin.user, company, "admin")
    run = fine_tune_start(company=company, plan=FineTunePlan(), principal=principal)
    OrmQ.objects.all().delete()  # the broker lost its task
    assert run.next_attempt_at == run.created_at + timedelta(minutes=2)
    assert revive(run.created_at + timedelta(minutes=1)) == []
    assert queued() == []  # it may still be waiting in a busy queue
    later = run.created_at + timedelta(minutes=3)
    assert revive(later) == []  # not a revival: it never ran
    assert queued() == [(COMPANY_TASK, ("finetune.run", company.pk))]
    assert FineTuneRun.objects.get(pk=run.pk).attempts == 0
    assert not AuditEntry.objects.filter(action_type__startswith="memory.fine_tune.auto").exists()


def test_the_schedule_runs_every_minute_on_the_default_cluster():
    spec = declared_schedules()["jobs-finetune.run"]
    assert (spec.func, spec.args, spec.schedule_type, spec.minutes, spec.cluster) == (
        DISPATCH_TASK,
        ("finetune.run",),
        "I",
        1,
        None,
    )
    assert "memory-fine-tune-revive" not in declared_schedules()


def test_sync_schedules_deletes_the_former_revive_schedule():
    Schedule.objects.create(
        name="synthorg:memory-fine-tune-revive",
        func="memory.finetune.tasks.revive_fine_tune_runs",
        schedule_type="I",
        minutes=1,
    )
    report = sync_schedules()
    assert "synthorg:memory-fine-tune-revive" in report.deleted
    assert not Schedule.objects.filter(name="synthorg:memory-fine-tune-revive").exists()
    assert Schedule.objects.get(name="synthorg:jobs-finetune.run").func == DISPATCH_TASK


def test_the_history_is_append_only(crashed):
    run, _embedder, _principal = crashed
    assert [row[0] for row in history(run)] == ["planned", "running"]
    for statement in (
        "UPDATE finetune_finetunerunstatuschange SET reason = 'x'",
        "DELETE FROM finetune_finetunerunstatuschange",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    assert len(history(run)) == 2
    assert timezone.now() < run.claimed_until + timedelta(minutes=1)
