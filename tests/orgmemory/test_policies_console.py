"""The Core policies console page, per role (Django test client)."""

import pytest
from django.test import Client

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.selectors.policies import CORE_POLICIES_HEADER, core_policy_block
from orgmemory.services.policies import policy_add
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/console/policies/"
CHANGE = "/console/policies/change"


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _admin(company):
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    return Principal.for_human(membership.user, company, "admin")


def test_admin_adds_edits_moves_and_retires(company):
    client = _client(company, "admin")
    assert (
        client.post(CHANGE, {"action": "add", "content": "No commits to main"}).status_code == 302
    )
    assert (
        client.post(CHANGE, {"action": "add", "content": "PRs need 2 approvals"}).status_code == 302
    )
    first, second = OrgFact.objects.order_by("position")
    response = client.post(
        CHANGE,
        {
            "action": "edit",
            "fact_id": first.fact_id,
            "expected_version": 1,
            "content": "Never push to main",
        },
    )
    assert response.status_code == 302
    order = f"{first.fact_id},{second.fact_id}"
    client.post(CHANGE, {"action": "down", "fact_id": first.fact_id, "order": order})
    assert core_policy_block(company=company) == (
        CORE_POLICIES_HEADER + "\n- PRs need 2 approvals\n- Never push to main"
    )
    html = client.get(URL).content.decode()
    assert (CORE_POLICIES_HEADER + "\n- PRs need 2 approvals\n- Never push to main") in html
    assert "tokens (estimated) of a 500-token warning threshold" in html
    client.post(CHANGE, {"action": "retire", "fact_id": second.fact_id, "expected_version": 1})
    assert [f.content for f in OrgFact.objects.filter(retracted_at__isnull=True)] == [
        "Never push to main"
    ]
    history = client.get(f"/console/policies/{first.fact_id}/history").content.decode()
    assert "No commits to main" in history and "Never push to main" in history


def test_a_stale_edit_shows_the_conflict_and_writes_nothing(company):
    client = _client(company, "admin")
    entry = policy_add(company=company, actor=_admin(company), content="One")
    client.post(
        CHANGE,
        {"action": "edit", "fact_id": entry.fact_id, "expected_version": 1, "content": "Two"},
    )
    response = client.post(
        CHANGE,
        {"action": "edit", "fact_id": entry.fact_id, "expected_version": 1, "content": "Lost"},
    )
    assert response.status_code == 409
    assert "The fact is at version 2, not the expected version 1." in response.content.decode()
    assert OrgFact.objects.get().content == "Two"
    assert OperationLogEntry.objects.count() == 2


def test_the_warning_threshold_is_the_configs(company):
    admin = _admin(company)
    company_config_set(
        company=company, data={"org_memory": {"core_policies_token_warning": 5}}, principal=admin
    )
    client = _client(company, "viewer")
    assert 'id="policy-warning"' not in client.get(URL).content.decode()
    policy_add(company=company, actor=admin, content="Every deployment needs a rollback plan.")
    html = client.get(URL).content.decode()
    assert "of a 5-token warning threshold" in html
    assert 'id="policy-warning"' in html


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_operators_and_viewers_read_but_cannot_change(company, role):
    entry = policy_add(company=company, actor=_admin(company), content="One")
    client = _client(company, role)
    html = client.get(URL).content.decode()
    assert "One" in html and 'id="add-button"' not in html
    audits = AuditEntry.objects.count()
    for data in (
        {"action": "add", "content": "Mine"},
        {"action": "edit", "fact_id": entry.fact_id, "expected_version": 1, "content": "Mine"},
        {"action": "retire", "fact_id": entry.fact_id, "expected_version": 1},
        {"action": "up", "fact_id": entry.fact_id, "order": str(entry.fact_id)},
    ):
        assert client.post(CHANGE, data).status_code == 403
    assert [(f.content, f.version) for f in OrgFact.objects.all()] == [("One", 1)]
    assert AuditEntry.objects.count() == audits


def test_another_companys_staff_sees_nothing(company):
    entry = policy_add(company=company, actor=_admin(company), content="Secret rule")
    other = _client(CompanyFactory(), "admin")
    assert "Secret rule" not in other.get(URL).content.decode()
    assert other.get(f"/console/policies/{entry.fact_id}/history").status_code == 404
    response = other.post(
        CHANGE, {"action": "edit", "fact_id": entry.fact_id, "expected_version": 1, "content": "x"}
    )
    assert response.status_code == 404
    assert OrgFact.objects.get().content == "Secret rule"
