"""Edit-then-approve and approval as the system on behalf of the approver (issue 23 item 3),
through the real evolver cycle against the OpenAI-wire stand-in and the console pages."""

import re

import pytest
from django.test import Client

from memory.procedural.evolver.presentation import VERDICTS
from memory.procedural.evolver.services import ACTION_PROMOTION, skill_evolver_run
from memory.procedural.evolver.supersession import Verdict
from memory.procedural.models import ExecutionReport
from orgmemory.approval_models import ApprovalDecision
from orgmemory.models import ApprovalItem, OperationLogEntry, OrgFact
from orgmemory.services.approvals import approval_decide
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from synthorg.errors import InvalidInputError
from tests.memory.procedural.evolver.test_evolver import _fleet, _operator
from tests.memory.procedural.evolver.test_evolver import llm as llm  # a fixture
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("llm")]

HUMANS_EXCLUDED = {
    "procedure": {"allowed_seniority": "senior", "human_allowed": False},
    "core_policy": {"allowed_seniority": None, "human_allowed": True},
}


def _enable(company, **org_memory):
    company_config_set(
        company=company,
        data={
            "memory": {
                "procedural": {
                    "evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}
                }
            },
            **({"org_memory": org_memory} if org_memory else {}),
        },
    )


def _promotion(company):
    _fleet(company)
    skill_evolver_run(company=company)
    return ApprovalItem.objects.get(company=company, action_type=ACTION_PROMOTION)


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def test_an_edited_proposal_is_published_as_edited_with_the_diff_recorded(company):
    _enable(company)
    item = _promotion(company)
    human = _operator(company)
    approval_decide(
        company=company,
        actor=human,
        item_id=item.pk,
        decision="approve",
        edits={
            "action": "retry the helm upgrade with --timeout 1200s and --atomic",
            "condition": "a helm upgrade of a large chart times out",  # unchanged: no edit
            "execution_steps": ["Check the hook duration", "Re-run with --timeout 1200s"],
        },
    )
    fact = OrgFact.objects.get(company=company)
    why = item.metadata["proposal"]["rationale"]  # the LLM's words, then the computed evidence
    assert why.startswith(
        "Pre-upgrade hooks run migrations that take about six minutes. 3 of 3 reports support "
        "this advice. Evidence: 3 execution reports of 3 agents ("
    )
    assert fact.content == (
        "Helm upgrades of large charts time out at 300s; use a longer timeout.\n"
        "When: a helm upgrade of a large chart times out\n"
        "Do: retry the helm upgrade with --timeout 1200s and --atomic\n"
        f"Why: {why}\n"
        "Steps:\n"
        "1. Check the hook duration\n"
        "2. Re-run with --timeout 1200s"
    )
    record = ApprovalDecision.objects.get(item=item)
    assert record.edits["fields"] == {
        "action": {
            "before": "retry the helm upgrade with --timeout 900s and --atomic",
            "after": "retry the helm upgrade with --timeout 1200s and --atomic",
        },
        "execution_steps": {
            "before": ["Check the hook duration", "Re-run helm upgrade --timeout 900s --atomic"],
            "after": ["Check the hook duration", "Re-run with --timeout 1200s"],
        },
    }
    assert record.edits["diff"].splitlines() == [
        "--- action (proposed)",
        "+++ action (approved)",
        "@@ -1 +1 @@",
        "-retry the helm upgrade with --timeout 900s and --atomic",
        "+retry the helm upgrade with --timeout 1200s and --atomic",
        "--- execution_steps (proposed)",
        "+++ execution_steps (approved)",
        "@@ -1,2 +1,2 @@",
        " 1. Check the hook duration",
        "-2. Re-run helm upgrade --timeout 900s --atomic",
        "+2. Re-run with --timeout 1200s",
    ]
    item.refresh_from_db()
    original = item.metadata["original_proposal"]["action"]
    assert original == "retry the helm upgrade with --timeout 900s and --atomic"
    approved = AuditEntry.objects.get(action_type="approval.approved", target_id=str(item.pk))
    assert approved.details["edited_fields"] == ["action", "execution_steps"]


@pytest.mark.parametrize(
    ("edits", "decision", "code", "message"),
    [
        ({"action": "  "}, "approve", "invalid_edit", "action may not be blank."),
        ({"title": "x"}, "approve", "invalid_edit", "title is not an editable part"),
        ({"execution_steps": []}, "approve", "invalid_edit", "execution_steps must be 1 to 20"),
        ({"action": "x" * 2001}, "approve", "invalid_edit", "at most 2000 characters"),
        ({"action": "other"}, "reject", "approval_not_editable", "only to approve"),
    ],
)
def test_a_bad_edit_is_refused_and_changes_nothing(company, edits, decision, code, message):
    _enable(company)
    item = _promotion(company)
    with pytest.raises(InvalidInputError) as exc:
        approval_decide(
            company=company,
            actor=_operator(company),
            item_id=item.pk,
            decision=decision,
            reason="no",
            edits=edits,
        )
    assert exc.value.code == code and message in exc.value.detail
    item.refresh_from_db()
    assert item.status == "pending" and "original_proposal" not in item.metadata
    assert not ApprovalDecision.objects.filter(item=item).exists()
    assert not OrgFact.objects.filter(company=company).exists()


def test_approval_applies_as_the_system_when_the_procedure_rule_excludes_humans(company):
    _enable(company, write_access={"rules": HUMANS_EXCLUDED})
    item = _promotion(company)
    human = _operator(company)
    decided = approval_decide(company=company, actor=human, item_id=item.pk, decision="approve")
    assert (decided.status, decided.consumed_at is not None) == ("approved", True)
    entry = OperationLogEntry.objects.get(company=company)
    assert (entry.category, entry.author_is_human, entry.author_user_id) == (
        "procedure",
        True,
        human.user.pk,
    )
    published = AuditEntry.objects.get(action_type="org_fact.published", company=company)
    assert (published.actor_user_id, published.actor_agent_id) == (None, None)
    assert published.details["actor"] == "system"
    assert published.details["on_behalf_of"] == human.user.get_username()
    assert published.details["approval_item"] == str(item.pk)
    assert not AuditEntry.objects.filter(action_type="org_fact.write_denied").exists()


def test_a_category_without_any_rule_is_still_refused_to_the_system(company):
    _enable(company, write_access={"rules": {"core_policy": HUMANS_EXCLUDED["core_policy"]}})
    item = _promotion(company)
    from orgmemory.write_access import OrgMemoryAccessDeniedError

    with pytest.raises(OrgMemoryAccessDeniedError):
        approval_decide(
            company=company, actor=_operator(company), item_id=item.pk, decision="approve"
        )
    item.refresh_from_db()
    assert item.status == "pending"
    assert not OrgFact.objects.filter(company=company).exists()


def test_console_edit_then_approve_shows_verdict_diff_and_report_links(company):
    _enable(company)
    item = _promotion(company)
    client = _client(company, "operator")
    page = client.get(f"/console/inbox/items/{item.pk}").content.decode()
    assert VERDICTS["PARTIAL"].label in page and VERDICTS["PARTIAL"].on_approve in page
    report_ids = item.evidence["report_ids"]
    links = re.findall(r'href="/console/memories/executions/([0-9a-f-]+)"', page)
    assert sorted(links) == sorted(report_ids)
    response = client.post(
        f"/console/inbox/items/{item.pk}/decide",
        {
            "decision": "approve",
            "edit_discovery": item.metadata["proposal"]["discovery"],
            "edit_condition": item.metadata["proposal"]["condition"],
            "edit_action": "page the on-call before retrying",
            "edit_rationale": item.metadata["proposal"]["rationale"],
            "edit_execution_steps": "Check the hook duration\n\nPage the on-call\n",
        },
    )
    assert response.status_code == 302
    fact = OrgFact.objects.get(company=company)
    assert "Do: page the on-call before retrying" in fact.content
    assert fact.content.endswith("Steps:\n1. Check the hook duration\n2. Page the on-call")
    record = ApprovalDecision.objects.get(item=item)
    assert sorted(record.edits["fields"]) == ["action", "execution_steps"]
    after = client.get(f"/console/inbox/items/{item.pk}").content.decode()
    assert "+page the on-call before retrying" in after


def test_console_refuses_a_blank_edit_on_the_page(company):
    _enable(company)
    item = _promotion(company)
    response = _client(company, "operator").post(
        f"/console/inbox/items/{item.pk}/decide", {"decision": "approve", "edit_action": " "}
    )
    assert response.status_code == 400
    assert 'id="edit-error"' in response.content.decode()
    assert "action may not be blank." in response.content.decode()
    assert ApprovalItem.objects.get(pk=item.pk).status == "pending"


def test_verdict_texts_cover_every_verdict():
    assert set(VERDICTS) == {v.value for v in Verdict}


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_report_page_for_each_role_and_404_for_another_company(company, role):
    _enable(company)
    _fleet(company, n=1)
    report = ExecutionReport.objects.get(company=company)
    page = _client(company, role).get(f"/console/memories/executions/{report.pk}")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<dd id="report-task">deploy</dd>' in html
    assert "helm upgrade timed out after 300s" in html
    assert "<code>helm_upgrade</code> — failed" in html
    assert "Lesson produced" in html
    other = _client(CompanyFactory(), "admin")
    assert other.get(f"/console/memories/executions/{report.pk}").status_code == 404
