"""Fine-tune runs are durable jobs (synthorg.jobs): a task claims the run under a lease that
every sign of life renews; a worker that dies leaves a ``running`` run whose lease passes,
and the every-minute schedule reclaims it and queues it again — as the kernel's retry
policy allows (``max_auto_resumes + 1`` attempts), each audited — then fails it with the
reason. A worker whose run was reclaimed meanwhile stops at its next renewal; every
transition is an append-only history row."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django_q.models import OrmQ

from memory.finetune.models import AdapterCheckpoint, FineTuneRun, FineTuneRunStatusChange
from memory.finetune.services import (
    AUTO_RESUME_EXHAUSTED,
    AUTO_RESUMED,
    COMPANY_TASK,
    FINE_TUNE_JOB,
    FineTunePlan,
    Revival,
    fine_tune_execute,
    fine_tune_resume,
    fine_tune_run_company,
    fine_tune_runs_revive,
    fine_tune_start,
)
from memory.finetune.tasks import revive_fine_tune_runs
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.jobs.registry import job_kind
from synthorg.jobs.services import job_claim
from synthorg.schedules import declared_schedules
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


def test_the_kind_is_registered():
    assert job_kind("finetune.run") is FINE_TUNE_JOB
    assert (FINE_TUNE_JOB.queued, FINE_TUNE_JOB.running) == ("planned", "running")


def test_a_run_whose_lease_passed_is_reclaimed_queued_and_finishes(crashed):
    run, embedder, principal = crashed
    lease_end = run.claimed_until
    # The worker may be alive until its lease ends: nothing is touched, nobody may claim it.
    assert fine_tune_runs_revive(now=lease_end - timedelta(seconds=1)) == []
    assert queued() == [] and job_claim(FINE_TUNE_JOB, run.pk) is None

    later = lease_end + timedelta(seconds=1)
    assert fine_tune_runs_revive(now=later) == [Revival(run.pk, "resumed")]
    revived = FineTuneRun.objects.get(pk=run.pk)
    assert (revived.status, revived.attempts, revived.epochs_done) == ("planned", 1, 3)
    assert (revived.claimed_until, revived.completed_at) == (None, None)
    assert revived.next_attempt_at == later + timedelta(minutes=2)  # dispatched
    assert queued() == [(COMPANY_TASK, (run.company_id,))]
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resumed")
    assert (entry.target_id, entry.actor_user_id, entry.actor_agent_id) == (str(run.pk), None, None)
    assert entry.details == {"epochs_done": 3, "attempts": 1, "max_auto_resumes": 2}
    # Queued once: the next sweeps within the dispatch lease leave it alone.
    assert fine_tune_runs_revive(now=later + timedelta(minutes=1)) == []
    assert len(queued()) == 1

    # The company's task claims it and continues from the saved epoch.
    assert fine_tune_run_company(run.company_id, embedder=embedder) == ["promoted"]
    done = FineTuneRun.objects.get(pk=run.pk)
    assert (done.epochs_done, done.attempts, done.next_attempt_at) == (10, 2, None)
    assert AdapterCheckpoint.objects.get(run=run).is_active
    statuses = [row[0] for row in history(run)]
    assert statuses[:5] == ["planned", "running", "failed", "planned", "running"]
    assert statuses[-2:] == ["running", "promoted"]
    assert history(run)[2][1:] == (RECLAIMED, 1, "")
    assert history(run)[3][1:] == (AUTO_RESUMED, 1, "")
    assert history(run)[0][3] == f"user:{principal.user.pk}"


def test_a_worker_whose_run_was_reclaimed_stops_at_its_next_renewal(crashed):
    """The worker was only slow (paused past its lease): the run was reclaimed and finished
    by another; the slow one's writes are refused and it returns the run's status."""
    run, embedder, _principal = crashed
    revived = fine_tune_runs_revive(now=run.claimed_until + timedelta(seconds=1))
    assert revived == [Revival(run.pk, "resumed")]
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
        assert fine_tune_runs_revive(now=slow.claimed_until + timedelta(seconds=1)) == [
            Revival(run.pk, "resumed")
        ]
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
        assert fine_tune_runs_revive(now=now) == [Revival(run.pk, "resumed")]
        assert FineTuneRun.objects.get(pk=run.pk).attempts == attempt
        # A worker claims it and dies too.
        claimed = job_claim(FINE_TUNE_JOB, run.pk, now=now)
        assert claimed.attempts == attempt + 1
        now = claimed.claimed_until
    OrmQ.objects.all().delete()
    now += timedelta(seconds=1)
    assert fine_tune_runs_revive(now=now) == [Revival(run.pk, "failed")]
    failed = FineTuneRun.objects.get(pk=run.pk)
    assert (failed.status, failed.completed_at, failed.epochs_done) == ("failed", now, 3)
    assert failed.next_attempt_at is None
    assert failed.reason == AUTO_RESUME_EXHAUSTED.format(attempts=3, minutes=2, max=2)
    assert queued() == []  # nothing queued for a run given up on
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resume_exhausted")
    assert (entry.details["attempts"], entry.details["max_auto_resumes"]) == (3, 2)
    assert fine_tune_runs_revive(now=now + timedelta(hours=1)) == []

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
    assert fine_tune_runs_revive(now=run.claimed_until + timedelta(seconds=1)) == [
        Revival(run.pk, "failed")
    ]
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
    assert fine_tune_runs_revive(now=dead.claimed_until - timedelta(seconds=1)) == []
    assert fine_tune_runs_revive(now=dead.claimed_until + timedelta(seconds=1)) == [
        Revival(run.pk, "failed")
    ]
    assert FineTuneRun.objects.get(pk=run.pk).reason == exhausted


def test_a_planned_run_whose_task_was_lost_is_queued_again_once(tmp_path, settings):
    company = CompanyFactory()
    store_pairs(AgentFactory(company=company), crafted(PAIRS)[0])
    enable(company, tmp_path, settings)
    admin = MembershipFactory(company=company, role="admin")
    principal = Principal.for_human(admin.user, company, "admin")
    run = fine_tune_start(company=company, plan=FineTunePlan(), principal=principal)
    OrmQ.objects.all().delete()  # the broker lost its task
    assert run.next_attempt_at == run.created_at + timedelta(minutes=2)
    assert fine_tune_runs_revive(now=run.created_at + timedelta(minutes=1)) == []
    assert queued() == []  # it may still be waiting in a busy queue
    later = run.created_at + timedelta(minutes=3)
    assert fine_tune_runs_revive(now=later) == []  # not a revival: it never ran
    assert queued() == [(COMPANY_TASK, (company.pk,))]
    assert FineTuneRun.objects.get(pk=run.pk).attempts == 0
    assert not AuditEntry.objects.filter(action_type__startswith="memory.fine_tune.auto").exists()
    assert revive_fine_tune_runs() == {"resumed": 0, "failed": 0}


def test_the_schedule_runs_every_minute():
    spec = declared_schedules()["memory-fine-tune-revive"]
    assert (spec.func, spec.schedule_type, spec.minutes) == (
        "memory.finetune.tasks.revive_fine_tune_runs",
        "I",
        1,
    )


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
