"""Failed evolver drafts against the strict LLM stand-in: recorded with a precise reason,
retried with back-off once the LLM answers, drafted by rule after the last attempt or when
no LLM is configured any more, re-queued by an operator — and never proposed twice."""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from memory.procedural.evolver.draft_failures import DRAFT_POLICY, MAX_ATTEMPTS
from memory.procedural.evolver.draft_retry import (
    DRAFT_JOB,
    NO_LLM,
    RULE_ITEM_PENDING,
    evolver_draft_requeue,
)
from memory.procedural.evolver.models import DraftFailure, DraftStatusChange, EvolverReport
from memory.procedural.evolver.services import ACTION_PROMOTION, skill_evolver_run
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.errors import AccessDeniedError, ConflictError, NotFoundError
from synthorg.jobs.dispatch import jobs_run_due
from synthorg.jobs.registry import DISPATCH_TASK
from synthorg.jobs.tasks import jobs_company, jobs_dispatch_kind
from synthorg.llm.resolution import forget_discovered_models
from synthorg.schedules import declared_schedules
from tests.memory.procedural.evolver.test_evolver import ORG_PROPOSAL, _enable, _fleet
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_model_discovery():
    forget_discovered_models()
    yield
    forget_discovered_models()


@pytest.fixture
def llm(settings):
    """The OpenAI profile, configured as users do (base URL and key; model discovered)."""
    with LLMProviderStandIn(PROFILES["openai"], answer=json.dumps(ORG_PROPOSAL)) as server:
        settings.SYNTHORG_LLM = server.settings(MAX_RETRIES=0)
        yield server


def _people(company, role="operator"):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    return membership, Principal.for_human(membership.user, company, role)


def history(draft) -> list[tuple]:
    return list(
        DraftStatusChange.objects.filter(draft=draft)
        .order_by("id")
        .values_list("status", "method", "attempt", "actor")
    )


def _failed_cycle(company, llm, fault=Fault.SERVER_ERROR):
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    llm.fault = fault
    run = skill_evolver_run(company=company)
    return run, DraftFailure.objects.get(company=company)


def test_outage_recorded_then_the_retry_emits_exactly_one_item(company, llm):
    run, draft = _failed_cycle(company, llm)
    assert (run.status, run.drafts_failed, run.proposals_emitted) == ("completed", 1, 0)
    assert (draft.pattern, draft.status, draft.attempts, draft.report_id) == (
        "failure:timeout",
        "pending",
        1,
        run.pk,
    )
    assert draft.reason.startswith(
        "LLMTransientError: chat completion request to "
        f"{llm.base_url}/chat/completions (model 'gpt-4o-mini') failed after 1 attempt(s): "
        "HTTP 500: "
    )
    assert "HTTP 500" in draft.reason
    assert "The server had an error while processing your request" in draft.reason
    assert draft.next_attempt_at == run.finished_at + timedelta(minutes=1)
    assert ApprovalItem.objects.count() == 0

    # A cycle while the draft is waiting leaves it to the retry (no LLM call, no item).
    calls = len(llm.chat_requests)
    waiting = skill_evolver_run(company=company)
    assert (waiting.skipped_awaiting_retry, waiting.drafts_failed) == (1, 0)
    assert len(llm.chat_requests) == calls
    # Not due yet: nothing runs.
    assert jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at - timedelta(seconds=1)).retried == 0

    llm.fault = None  # the LLM recovers
    summary = jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at)
    assert (summary.retried, summary.waiting) == (1, 0)
    item = ApprovalItem.objects.get()
    draft.refresh_from_db()
    assert (draft.status, draft.method, draft.item_id, draft.attempts, draft.reason) == (
        "drafted",
        "llm",
        item.pk,
        2,
        "",
    )
    assert draft.next_attempt_at is None
    assert (item.action_type, item.status, item.metadata["pattern"]) == (
        ACTION_PROMOTION,
        "pending",
        "failure:timeout",
    )
    assert (item.evidence["method"], item.evidence["draft_attempts"]) == ("llm", 2)
    assert item.metadata["proposal"]["discovery"] == ORG_PROPOSAL["discovery"]
    retry_run = EvolverReport.objects.get(trigger="retry")
    assert (retry_run.status, retry_run.method, retry_run.proposals_emitted) == (
        "completed",
        "llm",
        1,
    )
    assert retry_run.items == [str(item.pk)]
    assert history(draft) == [
        ("pending", "", 1, ""),
        ("retrying", "", 2, ""),
        ("drafted", "llm", 2, ""),
    ]

    # The next cycle and the next retry run propose nothing again.
    again = skill_evolver_run(company=company)
    assert (again.proposals_emitted, again.skipped_already_proposed) == (0, 1)
    assert jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at or again.finished_at).retried == 0
    assert ApprovalItem.objects.count() == 1


@pytest.mark.parametrize(
    ("extra", "fault", "expected"),
    [
        ({"MODEL": "gpt-nope"}, None, ("HTTP 404", "The model `gpt-nope` does not exist")),
        ({}, Fault.RATE_LIMITED_ONCE, ("HTTP 429", "Rate limit reached for gpt-4o-mini")),
        ({}, Fault.NO_MODELS, ("LLMConfigurationError: no model to ask",)),
    ],
)
def test_the_reason_is_precise(company, llm, settings, extra, fault, expected):
    settings.SYNTHORG_LLM = llm.settings(MAX_RETRIES=0, **extra)
    _, draft = _failed_cycle(company, llm, fault=fault)
    assert all(fragment in draft.reason for fragment in expected), draft.reason
    page = _console(company, "viewer").get("/console/memories/skill-evolver").content.decode()
    assert expected[0] in page


def test_an_unusable_answer_is_replaced_by_the_rule_draft_at_once(company, llm):
    """The model answered but nothing usable came of it: the rule draft stands in at once
    (never worse than no LLM), with the reason in the item's evidence and the run's error."""
    _enable(company, min_confidence_for_org_promotion=0.5)
    _fleet(company)
    llm.fault = Fault.TRUNCATED
    run = skill_evolver_run(company=company)
    assert not DraftFailure.objects.exists()
    item = ApprovalItem.objects.get()
    assert (item.evidence["method"], item.metadata["method"]) == ("rule", "rule")
    reason = item.evidence["llm_failure"]["reason"]
    assert "invalid JSON from proposer" in reason and "cut off at max_tokens" in reason
    assert (run.drafts_failed, run.proposals_emitted) == (1, 1)
    assert "draft of failure:timeout refused: invalid JSON from proposer" in run.error


def test_invalid_json_reason(company, settings):
    with LLMProviderStandIn(PROFILES["openai"], answer="I think you should retry.") as server:
        settings.SYNTHORG_LLM = server.settings(MAX_RETRIES=0)
        _enable(company, min_confidence_for_org_promotion=0.5)
        _fleet(company)
        skill_evolver_run(company=company)
    item = ApprovalItem.objects.get()
    assert item.evidence["llm_failure"]["reason"].startswith("invalid JSON from proposer:")


def test_back_off_then_gave_up_with_a_rule_item_carrying_the_llm_failure(company, llm):
    _, draft = _failed_cycle(company, llm)
    delays = []
    while draft.status == "pending":
        due = draft.next_attempt_at
        assert jobs_run_due(DRAFT_JOB, now=due).retried == 1
        draft.refresh_from_db()
        if draft.next_attempt_at:
            delays.append(draft.next_attempt_at - due)
    assert [d // timedelta(minutes=1) for d in delays] == [2, 4, 8, 16, 32, 60]
    assert [DRAFT_POLICY.delay(n) // timedelta(minutes=1) for n in range(1, 8)] == [
        1,
        2,
        4,
        8,
        16,
        32,
        60,
    ]
    assert (draft.status, draft.method, draft.attempts) == ("gave_up", "rule", MAX_ATTEMPTS)
    assert draft.reason.startswith(f"gave up after {MAX_ATTEMPTS} attempts; drafted by rule.")
    item = ApprovalItem.objects.get()
    assert draft.item_id == item.pk
    assert (item.evidence["method"], item.metadata["method"]) == ("rule", "rule")
    assert "HTTP 500" in item.evidence["llm_failure"]["reason"]
    assert item.evidence["llm_failure"]["attempts"] == MAX_ATTEMPTS
    statuses = [s for s, *_ in history(draft)]
    assert statuses == ["pending"] + ["retrying", "pending"] * 6 + ["retrying", "gave_up"]
    assert skill_evolver_run(company=company).skipped_already_proposed == 1
    assert ApprovalItem.objects.count() == 1


def test_an_outage_costs_one_call_per_company_per_run(company, llm):
    _enable(company, min_confidence_for_org_promotion=0.5)
    agents = _fleet(company)
    from tests.memory.procedural.evolver.test_evolver import _report

    for agent in agents:
        _report(agent, category="oom")
    llm.fault = Fault.SERVER_ERROR
    skill_evolver_run(company=company)
    drafts = list(DraftFailure.objects.order_by("pattern"))
    assert [d.pattern for d in drafts] == ["failure:oom", "failure:timeout"]
    calls = len(llm.chat_requests)
    summary = jobs_run_due(DRAFT_JOB, now=max(d.next_attempt_at for d in drafts))
    assert (summary.retried, summary.waiting) == (1, 1)
    assert len(llm.chat_requests) == calls + 1
    assert sorted(DraftFailure.objects.values_list("attempts", flat=True)) == [1, 2]


def test_no_llm_any_more_drafts_by_rule_at_once(company, llm, settings):
    _, draft = _failed_cycle(company, llm)
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    assert jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at).retried == 1
    draft.refresh_from_db()
    item = ApprovalItem.objects.get()
    assert (draft.status, draft.method, draft.item_id, draft.reason) == (
        "drafted",
        "rule",
        item.pk,
        NO_LLM,
    )
    assert item.evidence["method"] == "rule"
    assert "HTTP 500" in item.evidence["llm_failure"]["reason"]
    assert EvolverReport.objects.get(trigger="retry").method == "rule"


def test_a_pattern_no_longer_eligible_is_superseded(company, llm):
    _, draft = _failed_cycle(company, llm)
    llm.fault = None
    _enable(company, min_confidence_for_org_promotion=0.5, min_agents_seen_pattern=5)
    calls = len(llm.chat_requests)
    jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at)
    draft.refresh_from_db()
    assert draft.status == "superseded" and draft.reason.startswith("no longer eligible")
    assert len(llm.chat_requests) == calls and ApprovalItem.objects.count() == 0


def _gave_up(company, llm):
    _, draft = _failed_cycle(company, llm)
    while draft.status == "pending":
        jobs_run_due(DRAFT_JOB, now=draft.next_attempt_at)
        draft.refresh_from_db()
    assert draft.status == "gave_up"
    return draft


def test_operator_requeues_a_gave_up_draft_after_rejecting_its_rule_item(company, llm):
    draft = _gave_up(company, llm)
    _, operator = _people(company)
    _, viewer = _people(company, "viewer")
    with pytest.raises(AccessDeniedError):
        evolver_draft_requeue(principal=viewer, draft_id=draft.pk)
    with pytest.raises(ConflictError) as pending:
        evolver_draft_requeue(principal=operator, draft_id=draft.pk)
    assert (pending.value.code, pending.value.detail) == (
        "draft_rule_item_pending",
        RULE_ITEM_PENDING,
    )
    _, other = _people(CompanyFactory())
    with pytest.raises(NotFoundError):
        evolver_draft_requeue(principal=other, draft_id=draft.pk)
    draft.refresh_from_db()
    assert (
        draft.status == "gave_up"
        and not AuditEntry.objects.filter(action_type="evolver_draft.requeued").exists()
    )

    rule_item = draft.item
    approval_decide(
        company=company, actor=operator, item_id=rule_item.pk, decision="reject", reason="llm"
    )
    requeued = evolver_draft_requeue(principal=operator, draft_id=draft.pk)
    assert (requeued.status, requeued.attempts) == ("pending", 0)
    audit = AuditEntry.objects.get(action_type="evolver_draft.requeued")
    assert (audit.target_id, audit.actor_user_id) == (str(draft.pk), operator.user.pk)
    assert audit.details["previous_status"] == "gave_up"
    assert history(draft)[-1] == ("pending", "rule", 0, f"user:{operator.user.pk}")

    llm.fault = None
    # the schedule's task hands the company its own task, which retries the draft
    assert jobs_dispatch_kind("evolver.draft") == {"reclaimed": 0, "companies": [company.pk]}
    assert jobs_company("evolver.draft", company.pk) == {
        "reclaimed": 0,
        "retried": 1,
        "waiting": 0,
        "busy": False,
    }
    draft.refresh_from_db()
    assert (draft.status, draft.method, draft.attempts) == ("drafted", "llm", 1)
    assert ApprovalItem.objects.filter(status="pending").get().pk == draft.item_id
    assert ApprovalItem.objects.count() == 2


def _console(company, role):
    membership, _ = _people(company, role)
    client = Client()
    client.force_login(membership.user)
    return client


def test_console_shows_draft_failures_and_requeues_through_the_service(company, llm):
    draft = _gave_up(company, llm)
    other = CompanyFactory()
    _enable(other, min_confidence_for_org_promotion=0.5)
    _fleet(other)
    skill_evolver_run(company=other)
    other_draft = DraftFailure.objects.get(company=other)

    viewer = _console(company, "viewer")
    page = viewer.get("/console/memories/skill-evolver").content.decode()
    assert page.count('class="draft-failure"') == 1
    assert f'id="draft-{draft.pk}"' in page and f'id="draft-{other_draft.pk}"' not in page
    assert "Gave up (rule)" in page and "gave up after 8 attempts" in page
    assert "Re-queue LLM draft" not in page  # viewers cannot re-queue
    url = f"/console/memories/skill-evolver/drafts/{draft.pk}/requeue"
    assert viewer.post(url).status_code == 403

    operator = _console(company, "operator")
    page = operator.get("/console/memories/skill-evolver").content.decode()
    assert "Re-queue LLM draft" in page
    refused = operator.post(url)
    assert refused.status_code == 409
    assert "still pending in the inbox" in refused.content.decode()
    other_url = f"/console/memories/skill-evolver/drafts/{other_draft.pk}/requeue"
    assert operator.post(other_url).status_code == 404
    ApprovalItem.objects.filter(pk=draft.item_id).update(status="expired")
    assert operator.post(url).status_code == 302
    draft.refresh_from_db()
    assert (draft.status, draft.attempts) == ("pending", 0)
    page = operator.get("/console/memories/skill-evolver").content.decode()
    assert "re-queued by an operator" in page


def test_pending_draft_shows_reason_attempts_and_next_retry(company, llm):
    _, draft = _failed_cycle(company, llm)
    page = _console(company, "viewer").get("/console/memories/skill-evolver").content.decode()
    assert "failure:timeout" in page and "HTTP 500" in page
    assert f"{draft.next_attempt_at:%Y-%m-%d %H:%M}" in page
    assert '<td data-label="Attempts">1</td>' in page


def test_one_open_draft_per_pattern_and_history_is_append_only(company, llm):
    _, draft = _failed_cycle(company, llm)
    with pytest.raises(DatabaseError), transaction.atomic():
        DraftFailure.objects.create(
            company=company,
            pattern=draft.pattern,
            report=draft.report,
            status="pending",
            attempts=1,
            next_attempt_at=draft.next_attempt_at,
            reason="x",
            created_at=draft.created_at,
            updated_at=draft.created_at,
        )
    with pytest.raises(DatabaseError), transaction.atomic():
        DraftFailure.objects.filter(pk=draft.pk).update(status="drafted")  # no item
    for sql in (
        "UPDATE evolver_draftstatuschange SET status = 'drafted'",
        "DELETE FROM evolver_draftstatuschange",
    ):
        with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as c:
            c.execute(sql)
        assert isinstance(error.value.__cause__, psycopg.errors.RaiseException)
        assert "append-only" in str(error.value)
    assert len(history(draft)) == 1


def test_the_retry_schedule_runs_every_minute_on_the_llm_cluster():
    spec = declared_schedules()["jobs-evolver.draft"]
    assert (spec.func, spec.args, spec.schedule_type, spec.minutes, spec.cluster) == (
        DISPATCH_TASK,
        ("evolver.draft",),
        "I",
        1,
        "llm",
    )
