"""Console execution reports: capture status, method and history; the operator re-queue."""

import pytest
from django.test import Client

from memory.procedural.models import CaptureStatusChange, ExecutionCapture
from memory.procedural.services.reports import execution_report_submit
from memory.procedural.tasks import capture_execution_report
from persistence.models import AuditEntry
from tests.memory.procedural import conftest as procedural
from tests.memory.procedural.conftest import FAILED_REPORT, set_procedural
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


llm = pytest.fixture(procedural.llm_server.__wrapped__, name="llm")


@pytest.fixture
def failed_report(company, llm):
    """A capture that failed: the LLM is down and the rule lesson that would stand in is
    below the company's min_confidence."""
    llm_server = llm
    set_procedural(company, min_confidence=0.9)
    agent = AgentFactory(company=company, name="deploy-bot")
    report = execution_report_submit(agent=agent, data=FAILED_REPORT, enqueue=False).report
    llm_server.enqueue(
        llm_server.CHAT_COMPLETIONS, ScriptedResponse(status=500, json=error_payload("down"))
    )
    assert capture_execution_report(str(report.pk)) == "failed"
    return report


def test_the_page_shows_status_method_and_history(company, failed_report):
    viewer = _client(company, "viewer")
    listing = viewer.get("/console/memories/executions").content.decode()
    assert "deploy-bot" in listing and "Deploy billing service" in listing
    page = viewer.get(f"/console/memories/executions/{failed_report.pk}")
    html = page.content.decode()
    assert page.status_code == 200
    assert "llm_error: LLMTransientError" in html
    assert html.count('class="history-row"') == 3  # queued, running, failed
    assert "Re-queue capture" not in html  # viewers only read


def test_operator_requeues_a_failed_capture_and_it_is_audited(
    company, failed_report, django_capture_on_commit_callbacks
):
    from django_q.models import OrmQ

    operator = _client(company, "operator")
    url = f"/console/memories/executions/{failed_report.pk}/requeue"
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(url)
    assert response.status_code == 302
    capture = ExecutionCapture.objects.get(report=failed_report)
    assert (capture.status, capture.attempts, capture.next_attempt_at) == ("queued", 0, None)
    last = CaptureStatusChange.objects.filter(report=failed_report).order_by("-id").first()
    assert (last.status, last.reason, last.actor) == (
        "queued",
        "re-queued by an operator",
        f"user:{operator.membership.user.pk}",
    )
    entry = AuditEntry.objects.get(action_type="execution_capture.requeued")
    assert (entry.actor_user_id, entry.target_id, entry.details["previous_status"]) == (
        operator.membership.user.pk,
        str(failed_report.pk),
        "failed",
    )
    [task] = OrmQ.objects.all()
    assert task.args() == (str(failed_report.pk),)
    # queued now: a second re-queue is refused (409) and changes nothing
    again = operator.post(url)
    assert again.status_code == 409
    assert "cannot be re-queued" in again.content.decode()
    assert AuditEntry.objects.filter(action_type="execution_capture.requeued").count() == 1


def test_viewer_cannot_requeue_and_other_company_is_404(company, failed_report):
    viewer = _client(company, "viewer")
    url = f"/console/memories/executions/{failed_report.pk}/requeue"
    response = viewer.post(url)
    assert response.status_code == 403
    assert "Only operators and admins" in response.content.decode()
    capture = ExecutionCapture.objects.get(report=failed_report)
    assert (capture.status, capture.attempts) == ("failed", 1)
    assert not AuditEntry.objects.filter(action_type="execution_capture.requeued").exists()
    outsider = _client(CompanyFactory(), "owner")
    assert outsider.post(url).status_code == 404
    assert outsider.get(f"/console/memories/executions/{failed_report.pk}").status_code == 404
    assert ExecutionCapture.objects.get(report=failed_report).status == "failed"
