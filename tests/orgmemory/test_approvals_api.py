"""REST: /api/v1/approvals — agents ask, humans (operator+) decide, companies are isolated."""

import pytest
from rest_framework.test import APIClient

from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_request
from persistence.models import AuditEntry
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/approvals"


def _human(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = APIClient()
    client.force_login(membership.user)
    client.user = membership.user
    return client


def _ask(caller, **overrides):
    body = {
        "action_type": "deploy:production",
        "title": "Deploy billing v2",
        "description": "New invoice renderer",
        "risk_level": "high",
        "evidence": {"tests": "green"},
        "ttl_seconds": 3600,
    }
    body.update(overrides)
    return caller.client.post(URL, body, format="json")


def test_agent_requests_and_reads_its_item(caller):
    response = _ask(caller)
    assert response.status_code == 201, response.content
    body = response.json()
    item = ApprovalItem.objects.get(pk=body["id"])
    assert body == {
        "id": str(item.pk),
        "action_type": "deploy:production",
        "title": "Deploy billing v2",
        "description": "New invoice renderer",
        "requested_by": caller.agent.name,
        "requester_agent_id": caller.agent.pk,
        "risk_level": "high",
        "source": "api",
        "status": "pending",
        "created_at": body["created_at"],
        "expires_at": body["expires_at"],
        "decided_at": None,
        "decided_by": None,
        "decision_reason": "",
        "task_id": None,
        "consumed_at": None,
        "evidence": {"tests": "green"},
        "metadata": {},
    }
    assert (item.expires_at - item.created_at).total_seconds() == 3600
    assert caller.client.get(f"{URL}/{item.pk}").json()["id"] == str(item.pk)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"ttl_seconds": 30}, "ttl_seconds"),
        ({"ttl_seconds": 604801}, "ttl_seconds"),
        ({"risk_level": "severe"}, "risk_level"),
        ({"title": ""}, "title"),
        ({"surprise": 1}, "surprise"),
        ({"evidence": {"note": "x" * 100_001}}, "evidence"),
        ({"evidence": ["not", "an", "object"]}, "evidence"),
        ({"task_id": 2**64}, "task_id"),
    ],
)
def test_bad_requests_are_400_and_store_nothing(caller, overrides, field):
    response = _ask(caller, **overrides)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert ApprovalItem.objects.count() == 0


def test_nul_characters_are_refused_before_anything_is_stored(caller):
    response = _ask(caller, evidence={"note": "a\x00b"})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert ApprovalItem.objects.count() == 0


def test_humans_do_not_file_requests(company):
    response = _human(company, "admin").post(
        URL, {"action_type": "x:y", "title": "t", "risk_level": "low"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["code"] == "agents_only"


def test_operator_approves_then_second_decision_is_409(company, caller):
    item_id = _ask(caller).json()["id"]
    operator = _human(company, "operator")
    response = operator.post(f"{URL}/{item_id}/approve", {}, format="json")
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["decided_by"]) == (
        "approved",
        operator.user.username,
    )
    again = _human(company, "owner").post(
        f"{URL}/{item_id}/reject", {"reason": "changed my mind"}, format="json"
    )
    assert again.status_code == 409
    assert again.json()["code"] == "approval_already_decided"
    assert again.json()["status"] == "approved"
    item = ApprovalItem.objects.get(pk=item_id)
    assert (item.status, item.decision_reason) == ("approved", "")


def test_reject_needs_a_reason(company, caller):
    item_id = _ask(caller).json()["id"]
    operator = _human(company, "operator")
    response = operator.post(f"{URL}/{item_id}/reject", {"reason": "  "}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "rejection_reason_required"
    assert ApprovalItem.objects.get(pk=item_id).status == "pending"
    missing = operator.post(f"{URL}/{item_id}/reject", {}, format="json")
    assert missing.status_code == 400
    assert ApprovalItem.objects.get(pk=item_id).status == "pending"
    ok = operator.post(f"{URL}/{item_id}/reject", {"reason": "not on Friday"}, format="json")
    assert ok.status_code == 200
    assert ApprovalItem.objects.get(pk=item_id).decision_reason == "not on Friday"
    assert (
        AuditEntry.objects.filter(action_type="approval.rejected", target_id=item_id).count() == 1
    )


def test_agents_and_viewers_get_403(company, caller, peer):
    item_id = _ask(caller).json()["id"]
    for client in (caller.client, peer.client, _human(company, "viewer")):
        response = client.post(f"{URL}/{item_id}/approve", {}, format="json")
        assert response.status_code == 403
        assert response["Content-Type"] == "application/problem+json"
    assert ApprovalItem.objects.get(pk=item_id).status == "pending"


def test_other_companies_items_are_404(company, caller, outsider):
    item_id = _ask(caller).json()["id"]
    foreign_admin = _human(CompanyFactory(), "admin")
    assert foreign_admin.get(f"{URL}/{item_id}").status_code == 404
    response = foreign_admin.post(f"{URL}/{item_id}/approve", {}, format="json")
    assert response.status_code == 404
    assert response.json()["code"] == "approval_not_found"
    assert outsider.client.get(f"{URL}/{item_id}").status_code == 404
    assert foreign_admin.get(URL).json()["results"] == []
    assert ApprovalItem.objects.get(pk=item_id).status == "pending"


def test_agents_see_only_their_own_items(company, caller, peer):
    mine = _ask(caller).json()["id"]
    theirs = _ask(peer).json()["id"]
    assert [i["id"] for i in caller.client.get(URL).json()["results"]] == [mine]
    assert caller.client.get(f"{URL}/{theirs}").status_code == 404
    viewer = _human(company, "viewer")
    assert {i["id"] for i in viewer.get(URL).json()["results"]} == {mine, theirs}


def test_list_filters_and_cursor_pagination(company, caller):
    for n in range(3):
        _ask(caller, title=f"item {n}", risk_level="low" if n else "critical")
    approval_request(
        company=company,
        action_type="skill_evolver:org_promotion",
        title="skill",
        risk_level="medium",
        source="skill_evolver",
        requested_by="skill_evolver",
    )
    human = _human(company, "operator")
    assert [i["title"] for i in human.get(f"{URL}?risk=critical").json()["results"]] == ["item 0"]
    assert [i["title"] for i in human.get(f"{URL}?source=skill_evolver").json()["results"]] == [
        "skill"
    ]
    only = human.get(f"{URL}?action_type=skill_evolver:org_promotion").json()["results"]
    assert [i["title"] for i in only] == ["skill"]
    assert human.get(f"{URL}?status=approved").json()["results"] == []
    assert human.get(f"{URL}?status=bogus").status_code == 400
    page = human.get(f"{URL}?page_size=3").json()
    rest = human.get(page["next"]).json()
    titles = [i["title"] for i in page["results"] + rest["results"]]
    assert titles == ["skill", "item 2", "item 1", "item 0"]
    assert rest["next"] is None


def test_agent_consumes_its_approved_item_once(company, caller, peer):
    item_id = _ask(caller).json()["id"]
    assert caller.client.post(f"{URL}/{item_id}/consume").json()["code"] == "approval_not_approved"
    _human(company, "operator").post(f"{URL}/{item_id}/approve", {}, format="json")
    assert peer.client.post(f"{URL}/{item_id}/consume").status_code == 404
    consumed = caller.client.post(f"{URL}/{item_id}/consume")
    assert consumed.status_code == 200
    assert consumed.json()["consumed_at"] is not None
    again = caller.client.post(f"{URL}/{item_id}/consume")
    assert (again.status_code, again.json()["code"]) == (409, "approval_already_consumed")


def test_outsider_agent_key_cannot_reach(company, caller):
    other = make_agent_caller(company=CompanyFactory())
    item_id = _ask(caller).json()["id"]
    assert other.client.post(f"{URL}/{item_id}/consume").status_code == 404


def test_list_query_count_does_not_grow_with_items(company, caller):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    human = _human(company, "operator")
    for n in range(3):
        _ask(caller, title=f"item {n}")
    with CaptureQueriesContext(connection) as small:
        assert len(human.get(URL).json()["results"]) == 3
    for n in range(12):
        _ask(caller, title=f"more {n}")
    with CaptureQueriesContext(connection) as large:
        assert len(human.get(URL).json()["results"]) == 15
    assert len(large.captured_queries) == len(small.captured_queries) <= 8
