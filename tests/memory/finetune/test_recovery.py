"""Auto-resume of fine-tune runs whose worker died: a stale heartbeat and a free lock get the
run queued again by the schedule, a bounded number of times, each audited; a live worker
(its lock held) is left alone; the heartbeat is a database constraint of a run in flight."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django_q.models import OrmQ

from memory.finetune import services as services
from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.services import (
    AUTO_RESUME_EXHAUSTED,
    FineTunePlan,
    Revival,
    fine_tune_execute,
    fine_tune_resume,
    fine_tune_runs_revive,
    fine_tune_start,
)
from memory.finetune.tasks import revive_fine_tune_runs
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.schedules import declared_schedules
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)
PAIRS = 120


class WorkerKilled(BaseException):
    """What a killed worker process looks like from the run's row: nothing is recorded (not
    an ``Exception``, so the run is not marked failed); its session lock is gone."""


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
        if FineTuneRun.objects.get(pk=row.pk).epochs_done == 3:
            raise WorkerKilled

    with pytest.raises(WorkerKilled):
        fine_tune_execute(run.pk, embedder=embedder, on_epoch=die)
    # The broker let go of the task (q2's timeout ended the worker and recorded the failure).
    OrmQ.objects.all().delete()
    run.refresh_from_db()
    assert (run.status, run.epochs_done, run.auto_resumes) == ("running", 3, 0)
    # The last sign of life is the third epoch's save (it beats with the state it saves).
    assert run.heartbeat_at == run.updated_at and run.started_at < run.heartbeat_at
    return run, embedder, principal


def queued_runs() -> list[str]:
    return [task.args()[0] for task in OrmQ.objects.order_by("id")]


def test_a_stale_run_is_resumed_by_the_schedule_and_finishes(crashed):
    run, embedder, _principal = crashed
    beat = run.heartbeat_at
    queued = queued_runs()

    # Fresh enough (the default 15 minutes have not passed): left alone.
    assert fine_tune_runs_revive(now=beat + timedelta(minutes=14)) == []
    assert queued_runs() == queued

    assert fine_tune_runs_revive(now=beat + timedelta(minutes=16)) == [Revival(run.pk, "resumed")]
    revived = FineTuneRun.objects.get(pk=run.pk)
    assert (revived.status, revived.auto_resumes, revived.epochs_done) == ("running", 1, 3)
    assert revived.heartbeat_at == beat + timedelta(minutes=16)
    assert queued_runs() == [*queued, str(run.pk)]
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resumed")
    assert (entry.target_id, entry.actor_user_id, entry.actor_agent_id) == (str(run.pk), None, None)
    assert entry.details == {
        "from_status": "running", "epochs_done": 3, "heartbeat_at": beat.isoformat(),
        "attempts": 1, "max_auto_resumes": 2,
    }  # fmt: skip
    # Just revived: its new heartbeat is fresh, so the next sweep leaves it alone.
    assert fine_tune_runs_revive(now=beat + timedelta(minutes=17)) == []

    # The queued task continues from the saved epoch and finishes.
    assert fine_tune_execute(run.pk, embedder=embedder) == "promoted"
    assert FineTuneRun.objects.get(pk=run.pk).epochs_done == 10
    assert AdapterCheckpoint.objects.get(run=run).is_active


@pytest.mark.parametrize("enqueue", ["enqueue_fine_tune", "enqueue_fine_tune_synthesis"])
def test_a_task_still_with_the_broker_is_not_a_failed_attempt(crashed, enqueue):
    """Queued behind other work (or taken by a worker q2 will redeliver for): the sweep
    neither counts an attempt nor queues the run twice, however long the wait — its
    training task, or its synthetic-query task on the LLM cluster."""
    run, _embedder, _principal = crashed
    getattr(services, enqueue)(run.pk)  # e.g. the last revival's task, still waiting
    for hours in (1, 2, 3, 4):
        assert fine_tune_runs_revive(now=run.heartbeat_at + timedelta(hours=hours)) == []
    assert queued_runs() == [str(run.pk)]
    waiting = FineTuneRun.objects.get(pk=run.pk)
    assert (waiting.status, waiting.auto_resumes) == ("running", 0)
    assert not AuditEntry.objects.filter(action_type__startswith="memory.fine_tune.auto_").exists()
    assert not services.run_is_held(run.pk)  # the sweep let go of the lock it took

    OrmQ.objects.all().delete()  # the task is gone without a heartbeat: now it counts
    later = run.heartbeat_at + timedelta(hours=5)
    assert fine_tune_runs_revive(now=later) == [Revival(run.pk, "resumed")]
    assert FineTuneRun.objects.get(pk=run.pk).auto_resumes == 1


def test_attempts_are_bounded_then_the_run_fails_with_the_reason(crashed):
    run, _embedder, principal = crashed
    now = run.heartbeat_at
    for attempt in (1, 2):
        now += timedelta(minutes=16)
        assert fine_tune_runs_revive(now=now) == [Revival(run.pk, "resumed")]
        assert FineTuneRun.objects.get(pk=run.pk).auto_resumes == attempt
        OrmQ.objects.all().delete()  # taken by a worker that died; the broker gave up
    queued = queued_runs()
    now += timedelta(minutes=16)
    assert fine_tune_runs_revive(now=now) == [Revival(run.pk, "failed")]
    failed = FineTuneRun.objects.get(pk=run.pk)
    assert (failed.status, failed.finished_at, failed.epochs_done) == ("failed", now, 3)
    assert failed.error == AUTO_RESUME_EXHAUSTED.format(attempts=3, minutes=15, max=2)
    assert queued_runs() == queued  # nothing queued for a run given up on
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.auto_resume_exhausted")
    assert (entry.details["attempts"], entry.details["max_auto_resumes"]) == (2, 2)
    assert fine_tune_runs_revive(now=now + timedelta(hours=1)) == []

    # Resumed by hand: the schedule's attempts start over.
    fine_tune_resume(company=run.company, run_id=run.pk, principal=principal)
    resumed = FineTuneRun.objects.get(pk=run.pk)
    assert (resumed.status, resumed.auto_resumes, resumed.error) == ("running", 0, "")


def test_max_auto_resumes_zero_fails_at_once(crashed, tmp_path, settings):
    run, _embedder, _principal = crashed
    enable(run.company, tmp_path, settings, max_auto_resumes=0, auto_resume_after_minutes=1)
    now = run.heartbeat_at + timedelta(minutes=2)
    assert fine_tune_runs_revive(now=now) == [Revival(run.pk, "failed")]
    assert FineTuneRun.objects.get(pk=run.pk).error == AUTO_RESUME_EXHAUSTED.format(
        attempts=1, minutes=1, max=0
    )


def test_a_worker_holding_the_lock_is_alive_whatever_its_heartbeat(crashed):
    run, _embedder, _principal = crashed
    holding, release = threading.Event(), threading.Event()

    def worker():
        try:
            assert services._try_lock(run.pk)
            holding.set()
            release.wait(timeout=60)
            services._unlock(run.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert holding.wait(timeout=60)
        later = run.heartbeat_at + timedelta(hours=2)
        assert fine_tune_runs_revive(now=later) == []
        assert FineTuneRun.objects.get(pk=run.pk).auto_resumes == 0
    finally:
        release.set()
        thread.join(timeout=60)
    assert revive_fine_tune_runs() == {"resumed": 0, "failed": 0}  # heartbeat is fresh now


def test_the_schedule_is_declared():
    spec = declared_schedules()["memory-fine-tune-revive"]
    assert (spec.func, spec.schedule_type, spec.minutes) == (
        "memory.finetune.tasks.revive_fine_tune_runs",
        "I",
        5,
    )


def test_a_run_in_flight_without_a_heartbeat_is_refused_by_the_database(crashed):
    run, _embedder, _principal = crashed
    with pytest.raises(IntegrityError), transaction.atomic():
        FineTuneRun.objects.filter(pk=run.pk).update(heartbeat_at=None)
    FineTuneRun.objects.filter(pk=run.pk).update(
        status="cancelled", finished_at=run.heartbeat_at, heartbeat_at=None
    )
    assert FineTuneRun.objects.get(pk=run.pk).heartbeat_at is None
