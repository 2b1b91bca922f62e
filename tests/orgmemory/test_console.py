"""Console inbox and decision pages (Django test client; the browser flow is in
tests/console/test_browser.py)."""

import pytest
from django.test import Client

from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide, approval_request
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _item(company, **overrides):
    fields = {
        "action_type": "deploy:production",
        "title": "Deploy billing v2",
        "risk_level": "high",
        "source": "api",
        "requested_by": "release-bot",
    }
    fields.update(overrides)
    return approval_request(company=company, **fields)


def test_console_requires_login():
    response = Client().get("/console/inbox/")
    assert response.status_code == 302
    assert response["Location"].startswith("/console/login")


def test_user_without_company_gets_403_page(db):
    from tests.persistence.factories import UserFactory

    client = Client()
    client.force_login(UserFactory(password=None))
    response = client.get("/console/inbox/")
    assert response.status_code == 403
    assert b"not a member of any company" in response.content


def test_superuser_without_a_membership_gets_an_explanation_not_a_403(db):
    from tests.persistence.factories import UserFactory

    client = Client()
    client.force_login(UserFactory(password=None, is_superuser=True, is_staff=True))
    response = client.get("/console/inbox/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="superuser-no-membership"' in html
    assert 'href="/admin/persistence/companymembership/add/"' in html
    assert 'class="decision"' not in html


def test_inbox_lists_pending_first_with_counts_and_filters(company):
    client = _client(company, "operator")
    low = _item(company, title="Rotate keys", risk_level="low")
    high = _item(company, title="Deploy billing v2")
    _item(CompanyFactory(), title="Foreign secret item")
    response = client.get("/console/inbox/")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("Rotate keys") < html.index("Deploy billing v2")  # oldest pending first
    assert "Foreign secret item" not in html
    assert "<strong>2</strong> pending" in html
    filtered = client.get("/console/inbox/?risk=high").content.decode()
    assert "Deploy billing v2" in filtered and "Rotate keys" not in filtered
    assert str(high.pk) in filtered and str(low.pk) not in filtered


def test_operator_approves_and_rejects_with_reason(company):
    client = _client(company, "operator")
    first, second = _item(company), _item(company, title="Second")
    response = client.post(f"/console/inbox/items/{first.pk}/decide", {"decision": "approve"})
    assert response.status_code == 302
    first.refresh_from_db()
    assert (first.status, first.decided_by_id) == ("approved", client.membership.user.pk)
    missing = client.post(f"/console/inbox/items/{second.pk}/decide", {"decision": "reject"})
    assert missing.status_code == 400
    assert "A reason is required to reject an item." in missing.content.decode()
    second.refresh_from_db()
    assert second.status == "pending"
    client.post(
        f"/console/inbox/items/{second.pk}/decide", {"decision": "reject", "reason": "Too risky"}
    )
    second.refresh_from_db()
    assert (second.status, second.decision_reason) == ("rejected", "Too risky")


def test_concurrent_decision_shows_a_clear_message_not_an_error_page(company):
    client = _client(company, "operator")
    item = _item(company)
    other = MembershipFactory(company=company, role="admin", user__password=None)
    approval_decide(
        company=company,
        actor=Principal.for_human(other.user, company, "admin"),
        item_id=item.pk,
        decision="approve",
    )
    response = client.post(
        f"/console/inbox/items/{item.pk}/decide", {"decision": "reject", "reason": "no"}
    )
    html = response.content.decode()
    assert response.status_code == 409
    assert "Someone else decided first." in html
    assert "This item was already approved." in html
    item.refresh_from_db()
    assert (item.status, item.decided_by_id) == ("approved", other.user.pk)


def test_viewer_reads_but_cannot_decide(company):
    client = _client(company, "viewer")
    item = _item(company)
    page = client.get(f"/console/inbox/items/{item.pk}").content.decode()
    assert "can read this item but not decide it" in page
    assert 'id="approve-button"' not in page
    response = client.post(f"/console/inbox/items/{item.pk}/decide", {"decision": "approve"})
    assert response.status_code == 403
    item.refresh_from_db()
    assert item.status == "pending"
    assert not AuditEntry.objects.filter(action_type="approval.approved").exists()


def test_other_companys_item_is_404(company):
    client = _client(company, "owner")
    foreign = _item(CompanyFactory())
    assert client.get(f"/console/inbox/items/{foreign.pk}").status_code == 404
    response = client.post(f"/console/inbox/items/{foreign.pk}/decide", {"decision": "approve"})
    assert response.status_code == 404
    assert ApprovalItem.objects.get(pk=foreign.pk).status == "pending"


def test_company_switcher(company):
    client = _client(company, "operator")
    second = CompanyFactory(name="Zeta Corp")
    MembershipFactory(company=second, user=client.membership.user, role="viewer")
    _item(second, title="Zeta item")
    # no company picked yet: the landing is the one with pending work (issue 33)
    assert "Zeta item" in client.get("/console/inbox/").content.decode()
    client.post("/console/company", {"company": company.slug, "next": "/console/inbox/"})
    assert "Zeta item" not in client.get("/console/inbox/").content.decode()
    response = client.post("/console/company", {"company": second.slug, "next": "/console/inbox/"})
    assert response.status_code == 302
    page = client.get("/console/inbox/").content.decode()
    assert "Zeta item" in page and "role-viewer" in page
    assert client.post("/console/company", {"company": "nope"}).status_code == 404


def test_the_chosen_company_does_not_follow_its_renamed_slug(company):
    """Issue 34: the session held the chosen company's slug; once that company renamed it
    and another company took it, a member of both was silently switched to the other."""
    from persistence.services.companies import company_rename

    client = _client(company, "operator")
    second = CompanyFactory(name="Zeta Corp", slug="zeta")
    third = CompanyFactory(name="Aardvark Inc", slug="aardvark")  # first by name
    for other in (second, third):
        MembershipFactory(company=other, user=client.membership.user, role="viewer")
    _item(second, title="Zeta item")
    _item(third, title="Aardvark item")
    client.post("/console/company", {"company": "zeta", "next": "/console/inbox/"})
    company_rename(company=second, name=second.name, slug="zeta-renamed")
    company_rename(company=third, name=third.name, slug="zeta")
    page = client.get("/console/inbox/").content.decode()
    assert "Zeta item" in page and "Aardvark item" not in page


def test_write_request_is_decided_in_the_same_inbox(company):
    from orgmemory.models import WriteAccessRequest
    from orgmemory.services.write_requests import write_request_file
    from tests.persistence.factories import AgentFactory

    junior = AgentFactory(company=company, seniority="junior")
    request = write_request_file(
        company=company,
        actor=Principal.for_agent(junior),
        content="All services expose /healthz.",
        category="convention",
        justification="outage reviews",
    )
    client = _client(company, "operator")
    assert "All services expose /healthz." in client.get("/console/inbox/").content.decode()
    response = client.post(
        f"/console/inbox/write-requests/{request.pk}/decide", {"decision": "approve"}
    )
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.status == WriteAccessRequest.Status.APPROVED
    assert request.published_operation.content == "All services expose /healthz."
    viewer = _client(company, "viewer")
    again = viewer.post(
        f"/console/inbox/write-requests/{request.pk}/decide", {"decision": "reject", "reason": "x"}
    )
    assert again.status_code == 403
