"""The console's failures page: every registered job kind's failed jobs in the operator's
company (captures, evolver drafts, webhook deliveries, re-embedding, fine-tune runs), each
re-queued through its kind's re-queue — audited, with the operator as the actor, isolated per
company."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_q.models import OrmQ

from memory.core.models.reembed import ReembedJob
from memory.finetune.models import FineTuneRun
from memory.procedural.evolver.models import DraftFailure, EvolverReport
from memory.procedural.models import ExecutionCapture
from memory.procedural.services.reports import execution_report_submit
from orgmemory.models import WebhookDelivery
from orgmemory.services.approvals import approval_request
from orgmemory.services.webhooks import webhook_configure
from persistence.models import AuditEntry
from synthorg.jobs.registry import job_kinds
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/console/failures"


def _webhook_delivery(company, *, status, at, reason="HTTP 503", attempts=5):
    webhook_configure(company=company, url="http://127.0.0.1:9/hook", secret="s", principal=None)
    item = approval_request(
        company=company, action_type="deploy:production", title=f"Deploy {company.slug}",
        risk_level="high", source="api", requested_by="release-bot",
    )  # fmt: skip
    delivery = item.webhook_deliveries.get()
    fields = {"delivered_at": at} if status == "delivered" else {}
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=status, attempts=attempts, reason=reason, updated_at=at, completed_at=at,
        next_attempt_at=None, last_attempt_at=at, **fields,
    )  # fmt: skip
    return WebhookDelivery.objects.get(pk=delivery.pk)


def seed_failures(company):
    """One failed job of each registered kind, a minute apart (the webhook the latest), and
    a delivered webhook (not a failure)."""
    now = timezone.now()
    at = [now - timedelta(minutes=m) for m in range(5)]
    reembed = ReembedJob.objects.create(
        company=company, to_embedder_id="openai:wide-embed", to_dims=768, status="failed",
        memories_total=7, memories_done=3, attempts=8, created_at=at[4], updated_at=at[3],
        completed_at=at[3],
        reason="the embedder openai:wide-embed failed on a batch (gave up after 8 attempts; "
        "an operator can re-queue it)",
    )  # fmt: skip
    run = EvolverReport.objects.create(
        company=company, trigger="schedule", status="completed", started_at=at[4],
        finished_at=at[4], window_start=at[4] - timedelta(days=7), window_end=at[4],
    )  # fmt: skip
    draft = DraftFailure.objects.create(
        company=company, pattern="failure:timeout", report=run, status="gave_up",
        reason="gave up after 8 attempts; drafted by rule. Last LLM failure: HTTP 500",
        attempts=8, created_at=at[4], updated_at=at[2], completed_at=at[2],
    )  # fmt: skip
    agent = AgentFactory(company=company, name="deploy-bot")
    report = execution_report_submit(agent=agent, data=FAILED_REPORT, enqueue=False).report
    ExecutionCapture.objects.filter(report=report).update(
        status="failed", attempts=8, updated_at=at[1], completed_at=at[1],
        reason="llm_error: LLMTransientError: HTTP 500 (gave up after 8 attempts; an operator "
        "can re-queue it)",
    )  # fmt: skip
    capture = ExecutionCapture.objects.get(report=report)
    fine_tune = FineTuneRun.objects.create(
        company=company, method="linear_adapter", embedder_id="openai:wide-embed", dims=768,
        status="failed", epochs_done=3, epochs_total=10, attempts=3, created_at=at[4],
        updated_at=at[4], completed_at=at[4],
        reason="The worker running this run was lost 3 times (no sign of life for 2 minutes); "
        "memory.fine_tune.max_auto_resumes is 2. Resume it by hand.",
    )  # fmt: skip
    _webhook_delivery(company, status="delivered", at=at[0], reason="", attempts=1)
    webhook = _webhook_delivery(company, status="failed", at=at[0])
    return {
        "webhook": webhook, "capture": capture, "draft": draft, "reembed": reembed,
        "fine_tune": fine_tune,
    }  # fmt: skip


def _client(company, role, **kwargs):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client(**kwargs)
    client.force_login(membership.user)
    client.user = membership.user
    return client


def _rows(response) -> list[tuple]:
    return [
        (f.kind.name, str(f.job.pk), f.job.status, f.job.attempts, f.job.reason)
        for f in response.context["failures"]
    ]


@pytest.fixture
def jobs(company):
    return seed_failures(company)


def test_every_registered_kind_is_on_the_page():
    assert {kind.name for kind in job_kinds() if kind.failed_statuses} == {
        "procedural.capture",
        "evolver.draft",
        "orgmemory.webhook",
        "memory.reembed",
        "ingestion.dream_request",
        "ingestion.extraction",
        "finetune.run",
    }


def test_the_page_lists_the_companys_failed_jobs_of_every_kind(company, jobs):
    other = CompanyFactory()
    _webhook_delivery(other, status="failed", at=timezone.now())
    response = _client(company, "viewer").get(URL)
    assert response.status_code == 200
    webhook, capture, draft, reembed, fine_tune = (
        jobs[k] for k in ("webhook", "capture", "draft", "reembed", "fine_tune")
    )
    assert _rows(response) == [
        ("orgmemory.webhook", str(webhook.pk), "failed", 5, "HTTP 503"),
        ("procedural.capture", str(capture.pk), "failed", 8, capture.reason),
        ("evolver.draft", str(draft.pk), "gave_up", 8, draft.reason),
        ("memory.reembed", str(reembed.pk), "failed", 8, reembed.reason),
        ("finetune.run", str(fine_tune.pk), "failed", 3, fine_tune.reason),
    ]
    html = response.content.decode()
    assert html.count('class="failed-job"') == 5
    for label in (
        "Webhook delivery",
        "Lesson capture",
        "Skill-evolver draft",
        "Re-embedding",
        "Fine-tune run",
    ):
        assert f'<td data-label="Kind">{label}</td>' in html
    assert "approval.pending: Deploy " + company.slug in html
    assert f'href="/console/inbox/items/{webhook.item_id}"' in html
    assert f'href="/console/memories/executions/{capture.report_id}"' in html
    assert f'href="/console/memories/skill-evolver#draft-{draft.pk}"' in html
    assert "— → openai:wide-embed (3/7 rows)" in html
    assert (
        f'<a href="/console/memories/fine-tune#run-{fine_tune.pk}">'
        "Query-side linear adapter on openai:wide-embed</a>"
    ) in html
    assert f"{webhook.updated_at:%Y-%m-%d %H:%M}" in html
    assert "Re-queue" not in html  # viewers only read
    assert '<a href="/console/failures" aria-current="page">Failures</a>' in html


def test_an_operator_requeues_a_webhook_delivery(company, jobs, django_capture_on_commit_callbacks):
    webhook = jobs["webhook"]
    operator = _client(company, "operator", enforce_csrf_checks=True)
    page = operator.get(URL)
    assert "Re-queue" in page.content.decode()
    url = f"/console/failures/orgmemory.webhook/{webhook.pk}/requeue"
    assert operator.post(url).status_code == 403  # no CSRF token
    before = OrmQ.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(url, {"csrfmiddlewaretoken": page.cookies["csrftoken"].value})
    assert (response.status_code, response["Location"]) == (302, URL)
    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempts, webhook.claimed_until) == ("pending", 0, None)
    assert webhook.next_attempt_at is not None and webhook.completed_at is None
    last = webhook.status_history.order_by("-id").first()
    assert (last.status, last.reason, last.actor) == (
        "pending",
        "re-queued by an operator",
        f"user:{operator.user.pk}",
    )
    audit = AuditEntry.objects.get(action_type="webhook_delivery.requeued")
    assert (audit.company_id, audit.actor_user_id, audit.target_type, audit.target_id) == (
        company.pk,
        operator.user.pk,
        "webhook_delivery",
        str(webhook.pk),
    )
    assert audit.details == {
        "kind": "orgmemory.webhook",
        "previous_status": "failed",
        "previous_reason": "HTTP 503",
    }
    queued = [q.task for q in OrmQ.objects.all()[before:]]
    assert [(t["func"], t["args"]) for t in queued] == [
        ("orgmemory.tasks.deliver_webhook", (str(webhook.pk),))
    ]
    assert str(webhook.pk) not in [row[1] for row in _rows(operator.get(URL))]


def test_each_kind_is_requeued_through_its_own_requeue(
    company, jobs, django_capture_on_commit_callbacks
):
    operator = _client(company, "operator")
    capture, draft, reembed = jobs["capture"], jobs["draft"], jobs["reembed"]
    with django_capture_on_commit_callbacks(execute=True):
        for kind, job in (
            ("procedural.capture", capture),
            ("evolver.draft", draft),
            ("memory.reembed", reembed),
        ):
            response = operator.post(f"/console/failures/{kind}/{job.pk}/requeue")
            assert response.status_code == 302, (kind, response.content.decode()[:500])
    for job in (capture, draft, reembed):
        job.refresh_from_db()
    assert (capture.status, capture.attempts) == ("queued", 0)
    assert (draft.status, draft.attempts) == ("pending", 0)
    assert (reembed.status, reembed.attempts, reembed.completed_at) == ("running", 0, None)
    actions = set(
        AuditEntry.objects.filter(actor_user=operator.user).values_list("action_type", flat=True)
    )
    assert actions == {
        "execution_capture.requeued",
        "evolver_draft.requeued",
        "reembed_job.requeued",
    }
    actor = f"user:{operator.user.pk}"
    assert reembed.history.order_by("-id").first().actor == actor
    assert draft.history.order_by("-id").first().actor == actor
    assert [row[0] for row in _rows(operator.get(URL))] == ["orgmemory.webhook", "finetune.run"]


def test_a_fine_tune_run_is_requeued_through_its_resume_path(
    company, jobs, django_capture_on_commit_callbacks
):
    """As a resume by hand: an admin's (an operator is refused, nothing changes), the run is
    ``planned`` and queued for a worker, its history names the admin, audited as a re-queue."""
    run = jobs["fine_tune"]
    url = f"/console/failures/finetune.run/{run.pk}/requeue"
    response = _client(company, "operator").post(url)
    assert response.status_code == 403
    assert (
        "Your role &#x27;operator&#x27; may not update fine tune records (needs &#x27;admin&#x27; "
        "or higher)."
    ) in response.content.decode()
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("failed", 3)

    admin = _client(company, "admin")
    before = OrmQ.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post(url)
    assert (response.status_code, response["Location"]) == (302, URL)
    run.refresh_from_db()
    assert (run.status, run.attempts, run.reason, run.completed_at) == ("planned", 0, "", None)
    last = run.history.order_by("-id").first()
    assert (last.status, last.reason, last.attempt, last.actor) == (
        "planned",
        "resumed by hand from failed",
        0,
        f"user:{admin.user.pk}",
    )
    audit = AuditEntry.objects.get(target_type="fine_tune_run")
    assert (audit.action_type, audit.actor_user_id, audit.target_id, audit.details) == (
        "fine_tune_run.requeued",
        admin.user.pk,
        str(run.pk),
        {"from_status": "failed", "epochs_done": 3, "via": "failures"},
    )
    queued = [q.task for q in OrmQ.objects.all()[before:]]
    assert [(t["func"], t["args"]) for t in queued] == [
        ("memory.finetune.tasks.run_fine_tune", (str(run.pk),))
    ]
    assert admin.post(url).status_code == 409  # planned now: not failed any more
    assert admin.post("/console/failures/finetune.run/not-a-uuid/requeue").status_code == 404


def test_another_companys_job_is_not_found_and_unchanged(company, jobs):
    other = CompanyFactory()
    theirs = _webhook_delivery(other, status="failed", at=timezone.now())
    operator = _client(company, "operator")
    response = operator.post(f"/console/failures/orgmemory.webhook/{theirs.pk}/requeue")
    assert response.status_code == 404
    for kind, pk in (("memory.reembed", "999999"), ("nope.kind", jobs["webhook"].pk)):
        assert operator.post(f"/console/failures/{kind}/{pk}/requeue").status_code == 404
    assert (
        operator.post("/console/failures/orgmemory.webhook/not-a-uuid/requeue").status_code == 404
    )
    theirs.refresh_from_db()
    assert (theirs.status, theirs.attempts) == ("failed", 5)
    assert not AuditEntry.objects.filter(action_type__endswith=".requeued").exists()


def test_a_job_that_is_not_failed_is_refused_with_the_reason(company, jobs):
    delivered = WebhookDelivery.objects.get(company=company, status="delivered")
    operator = _client(company, "operator")
    response = operator.post(f"/console/failures/orgmemory.webhook/{delivered.pk}/requeue")
    assert response.status_code == 409
    assert "Only a failed job can be re-queued; this one is delivered." in (
        response.content.decode()
    )
    delivered.refresh_from_db()
    assert (delivered.status, delivered.attempts) == ("delivered", 1)


def test_viewers_and_non_members_cannot_requeue(company, jobs):
    webhook = jobs["webhook"]
    url = f"/console/failures/orgmemory.webhook/{webhook.pk}/requeue"
    viewer = _client(company, "viewer")
    assert viewer.post(url).status_code == 403
    outsider = Client()
    outsider.force_login(UserFactory(password=None))
    assert outsider.get(URL).status_code == 403
    assert outsider.post(url).status_code == 403
    member_elsewhere = _client(CompanyFactory(), "owner")
    assert member_elsewhere.post(url).status_code == 404
    assert viewer.get(url).status_code == 405  # POST only
    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempts) == ("failed", 5)
    assert not AuditEntry.objects.filter(action_type__endswith=".requeued").exists()
