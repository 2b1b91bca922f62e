"""Extraction runs on the durable-job kernel (:mod:`synthorg.jobs`, the kind
``ingestion.extraction``): a dead worker's run is reclaimed, a busy slot defers without an
attempt, LLM errors back off and give up after the policy's attempts with their history, an
operator re-queues a given-up run (audited), and one company's runs never touch another's."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_q.models import OrmQ

from memory.ingestion.models import ExtractionRun, ExtractionRunStatusChange
from memory.ingestion.services.extraction import (
    DEFERRED,
    EXTRACTION_JOB,
    conversation_extract,
    conversations_extract_due,
    extraction_queue,
)
from persistence.models import AuditEntry
from persistence.selectors.config import company_config
from synthorg.jobs.services import job_claim
from tests.conftest import make_agent_caller
from tests.memory.ingestion.conftest import fact, flush, reply
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.llm_slots import slot_held_elsewhere
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db

BILLING = "Billing deploys every Friday at noon UTC."
DOWN = ScriptedResponse(status=503, json=error_payload("down"))


def history(run) -> list[tuple]:
    return list(
        ExtractionRunStatusChange.objects.filter(run_id=run.pk)
        .order_by("id")
        .values_list("status", "attempt", "actor")
    )


def test_a_run_whose_worker_died_is_reclaimed_and_runs_again(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    now = timezone.now()
    config = company_config(caller.company).memory.extraction
    queued = extraction_queue(conversation, force=True, now=now, config=config)
    dead = job_claim(EXTRACTION_JOB, queued.pk, now=now)  # … and its worker is killed
    assert (dead.status, dead.attempts) == ("running", 1)

    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    later = now + EXTRACTION_JOB.lease() + timedelta(seconds=1)
    assert conversations_extract_due(now=later) == 1

    run = ExtractionRun.objects.get(pk=dead.pk)
    assert (run.status, run.attempts, run.added, run.claimed_until) == ("succeeded", 2, 1, None)
    assert [s for s, _, _ in history(run)] == [
        "queued",
        "running",
        "queued",  # reclaimed: the lease passed
        "running",
        "succeeded",
    ]
    assert ExtractionRunStatusChange.objects.get(run_id=run.pk, status="queued", attempt=1).reason
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == 1


def test_a_busy_slot_defers_the_run_without_an_attempt(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    with slot_held_elsewhere(caller.company.pk):
        run = conversation_extract(conversation=conversation, force=True)
    assert (run.status, run.attempts, run.reason) == ("queued", 0, DEFERRED.format(limit=1))
    run.refresh_from_db()
    assert (run.status, run.attempts, run.claimed_until) == ("queued", 0, None)
    assert run.next_attempt_at > timezone.now()
    assert [(s, a) for s, a, _ in history(run)] == [("queued", 0), ("running", 1), ("queued", 0)]
    assert llm.requests_to(llm.CHAT_COMPLETIONS) == []

    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    assert conversations_extract_due(now=run.next_attempt_at) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 1)


def test_llm_errors_back_off_then_give_up_after_the_policys_attempts(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    attempts = EXTRACTION_JOB.policy.max_attempts
    for _ in range(attempts):
        llm.enqueue(llm.CHAT_COMPLETIONS, DOWN)
    run = conversation_extract(conversation=conversation, force=True)
    backoff = 60  # retry_backoff_seconds, the default
    assert (run.status, run.attempts) == ("failed", 1)
    assert run.next_attempt_at - run.updated_at == timedelta(seconds=backoff)
    clock = run.next_attempt_at
    for attempt in range(2, attempts + 1):
        assert conversations_extract_due(now=clock) == 1
        run.refresh_from_db()
        assert run.attempts == attempt
        if attempt < attempts:
            assert run.status == "failed"
            # doubling per attempt, at most an hour
            expected = min(timedelta(seconds=backoff * 2 ** (attempt - 1)), timedelta(hours=1))
            assert run.next_attempt_at - run.updated_at == expected
            clock = run.next_attempt_at
    assert (run.status, run.next_attempt_at) == ("gave_up", None)
    assert run.reason.endswith(f"(gave up after {attempts} attempts; an operator can re-queue it)")
    assert conversations_extract_due(now=clock + timedelta(days=1)) == 0
    statuses = [s for s, _, _ in history(run)]
    assert statuses[:3] == ["queued", "running", "failed"]
    assert statuses[-1] == "gave_up"
    assert statuses.count("running") == attempts
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == attempts
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.extraction_due_at) == (0, None)


def test_an_operator_requeues_a_given_up_run_audited(
    caller, llm, django_capture_on_commit_callbacks
):
    conversation = flush(caller.agent, [BILLING])
    ExtractionRun.objects.create(
        company=caller.company,
        agent=caller.agent,
        conversation=conversation,
        trigger="debounce",
        status="gave_up",
        first_seq=1,
        last_seq=1,
        message_count=1,
        attempts=8,
        reason="HTTP 503 (gave up after 8 attempts; an operator can re-queue it)",
        created_at=timezone.now(),
        updated_at=timezone.now(),
        completed_at=timezone.now(),
    )
    run = ExtractionRun.objects.get(conversation=conversation)
    membership = MembershipFactory(company=caller.company, role="operator", user__password=None)
    operator = Client()
    operator.force_login(membership.user)
    page = operator.get("/console/failures")
    assert str(run.pk) in page.content.decode()
    before = OrmQ.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(f"/console/failures/ingestion.extraction/{run.pk}/requeue")
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.attempts, run.completed_at) == ("queued", 0, None)
    assert history(run)[-1] == ("queued", 0, f"user:{membership.user.pk}")
    audit = AuditEntry.objects.get(action_type="extraction_run.requeued")
    assert (audit.company_id, audit.actor_user_id, audit.target_id) == (
        caller.company.pk,
        membership.user.pk,
        str(run.pk),
    )
    assert audit.details["previous_status"] == "gave_up"
    queued = [q.task for q in OrmQ.objects.all()[before:]]
    assert [(t["func"], t["args"]) for t in queued] == [
        ("synthorg.jobs.tasks.job_run_task", ("ingestion.extraction", str(run.pk)))
    ]

    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    assert conversations_extract_due(now=timezone.now()) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts, run.added) == ("succeeded", 1, 1)


def test_one_companys_runs_never_touch_anothers(caller, llm):
    other = make_agent_caller(company=CompanyFactory())
    mine = flush(caller.agent, [BILLING])
    theirs = flush(other.agent, ["Theirs deploy on Mondays."])
    config = company_config(caller.company).memory.extraction
    extraction_queue(mine, force=True, now=timezone.now(), config=config)
    extraction_queue(theirs, force=True, now=timezone.now(), config=config)

    # a busy slot of one company defers only its own run
    reply(llm, {"facts": [fact("Theirs deploy on Mondays.")]})
    with slot_held_elsewhere(caller.company.pk):
        assert conversations_extract_due(now=timezone.now()) == 1
    runs = ExtractionRun.objects.exclude(trigger="turns")
    assert dict(runs.values_list("company_id", "status")) == {
        caller.company.pk: "queued",
        other.company.pk: "succeeded",
    }
    # an operator of one company cannot see or re-queue the other's run
    theirs_run = runs.get(company=other.company)
    ExtractionRun.objects.filter(pk=theirs_run.pk).update(status="gave_up")
    membership = MembershipFactory(company=caller.company, role="operator", user__password=None)
    operator = Client()
    operator.force_login(membership.user)
    assert str(theirs_run.pk) not in operator.get("/console/failures").content.decode()
    response = operator.post(f"/console/failures/ingestion.extraction/{theirs_run.pk}/requeue")
    assert response.status_code == 404
    theirs_run.refresh_from_db()
    assert theirs_run.status == "gave_up"
    assert not AuditEntry.objects.filter(action_type="extraction_run.requeued").exists()


def test_a_given_up_run_is_not_requeued_over_a_newer_open_run(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    now = timezone.now()
    fields = dict(
        company=caller.company,
        agent=caller.agent,
        conversation=conversation,
        trigger="debounce",
        first_seq=1,
        last_seq=1,
        message_count=1,
        created_at=now,
        updated_at=now,
    )
    gave_up = ExtractionRun.objects.create(status="gave_up", attempts=8, **fields)
    ExtractionRun.objects.create(status="queued", next_attempt_at=now, **fields)
    membership = MembershipFactory(company=caller.company, role="operator", user__password=None)
    operator = Client()
    operator.force_login(membership.user)
    response = operator.post(f"/console/failures/ingestion.extraction/{gave_up.pk}/requeue")
    assert response.status_code == 409
    gave_up.refresh_from_db()
    assert gave_up.status == "gave_up"
    assert not AuditEntry.objects.filter(action_type="extraction_run.requeued").exists()
