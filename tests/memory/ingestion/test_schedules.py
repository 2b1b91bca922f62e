"""q2 wiring: the sweep and the per-company dream schedules, and the immediate enqueue when
pending tokens exceed the limit."""

import pytest
from django_q.models import OrmQ, Schedule
from django_q.signing import SignedPackage

from memory.ingestion.schedules import dream_schedule_name
from synthorg.jobs.registry import DISPATCH_TASK
from synthorg.schedules import sync_schedules
from tests.memory.ingestion.conftest import configure, flush

pytestmark = pytest.mark.django_db


def test_sync_creates_the_sweep_and_one_dream_schedule_per_company(
    company, django_capture_on_commit_callbacks
):
    # the sweep's schedules before the job kernel dispatched extraction and dream requests
    for stale in ("ingestion-extraction-sweep", "ingestion-dream-request-retry"):
        Schedule.objects.create(
            name=f"synthorg:{stale}", func=f"memory.ingestion.tasks.{stale}", schedule_type="I"
        )
    report = sync_schedules()
    assert {
        "synthorg:ingestion-extraction-sweep",
        "synthorg:ingestion-dream-request-retry",
    } <= set(report.deleted)
    assert not Schedule.objects.filter(name__startswith="synthorg:ingestion-").exclude(
        name__startswith="synthorg:ingestion-dream:"
    )
    sweep = Schedule.objects.get(name="synthorg:jobs-ingestion.extraction")
    assert (sweep.func, sweep.args, sweep.schedule_type, sweep.minutes, sweep.cluster) == (
        DISPATCH_TASK,
        repr(("ingestion.extraction",)),
        Schedule.MINUTES,
        1,
        "llm",
    )
    dream = Schedule.objects.get(name=f"synthorg:{dream_schedule_name(company.pk)}")
    assert (dream.func, dream.schedule_type) == (
        "memory.ingestion.tasks.dream_company",
        Schedule.DAILY,
    )
    # the config change re-syncs (memory's config-change hook): weekly, then none
    with django_capture_on_commit_callbacks(execute=True):
        configure(company, dream={"interval": "weekly"})
    dream.refresh_from_db()
    assert dream.schedule_type == Schedule.WEEKLY
    with django_capture_on_commit_callbacks(execute=True):
        configure(company, dream={"enabled": False})
    assert not Schedule.objects.filter(name=f"synthorg:{dream_schedule_name(company.pk)}").exists()


def test_pending_tokens_over_the_limit_enqueue_the_task_on_commit(
    caller, django_capture_on_commit_callbacks
):
    configure(caller.company, extraction={"max_pending_tokens": 50})
    with django_capture_on_commit_callbacks(execute=True):
        flush(caller.agent, ["short"])
    assert OrmQ.objects.count() == 0  # debounced: only the schedule
    with django_capture_on_commit_callbacks(execute=True):
        conversation = flush(caller.agent, ["x" * 400])
    [queued] = OrmQ.objects.all()
    task = SignedPackage.loads(queued.payload)
    assert task["func"] == "memory.ingestion.tasks.extract_conversation"
    assert task["kwargs"] == {"conversation_pk": conversation.pk}


def test_a_new_company_gets_its_dream_schedule_at_once(db):
    from persistence.services.companies import company_create

    company = company_create(name="Fresh", slug="fresh")
    dream = Schedule.objects.get(name=f"synthorg:{dream_schedule_name(company.pk)}")
    assert dream.kwargs == repr({"company_id": company.pk})
    quiet = company_create(
        name="Quiet", slug="quiet", config={"memory": {"dream": {"interval": "never"}}}
    )
    assert not Schedule.objects.filter(name=f"synthorg:{dream_schedule_name(quiet.pk)}").exists()
