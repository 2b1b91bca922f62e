"""The console inbox at any volume: server-side pages, filters, order and bounded counts
(Django test client; the browser checks are in tests/console/test_inbox_browser.py)."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orgmemory import inbox
from orgmemory.approval_models import ApprovalItem
from orgmemory.inbox import InboxFilters, inbox_page
from orgmemory.models import WriteAccessRequest
from orgmemory.services.approvals import approval_request
from orgmemory.services.write_requests import write_request_file
from persistence.principal import Principal
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role, **user):
    membership = MembershipFactory(company=company, role=role, user__password=None, **user)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _item(company, *, ttl, risk="medium", title=None, now=None, **fields):
    return approval_request(
        company=company,
        action_type=fields.pop("action_type", "deploy:production"),
        title=title or f"{risk} in {ttl}",
        risk_level=risk,
        source="api",
        requested_by=fields.pop("requested_by", "release-bot"),
        ttl=ttl,
        now=now,
        **fields,
    )


def _bulk(company, n, *, now):
    """n pending items, item k expiring k minutes after the first (so the order is known)."""
    ApprovalItem.objects.bulk_create(
        ApprovalItem(
            company=company,
            action_type="deploy:production",
            title=f"bulk {k:03d}",
            requested_by="bench",
            risk_level="low",
            source="api",
            created_at=now - timedelta(minutes=k),
            expires_at=now + timedelta(hours=1, minutes=k),
        )
        for k in range(n)
    )


def _write_request(company, agent):
    agent.seniority = "junior"
    agent.save()
    return write_request_file(
        company=company,
        actor=Principal.for_agent(agent),
        content="All services expose /healthz.",
        category="convention",
        justification="outage reviews",
    )


def _ids(html: str) -> list[str]:
    return re.findall(r'<tr class="decision" data-id="([^"]+)"', html)


def test_default_order_is_closest_to_expiry_then_riskiest_and_never_expiring_last(company):
    now = timezone.now()
    request = _write_request(company, AgentFactory(company=company))
    week_low = _item(company, ttl=timedelta(days=7), risk="low")
    soon_high = _item(company, ttl=timedelta(minutes=59), risk="high")
    day_low = _item(company, ttl=timedelta(days=1), risk="low", now=now)
    day_critical = _item(company, ttl=timedelta(days=1), risk="critical", now=now)
    page = inbox_page(company=company)
    assert [d.id for d in page.decisions] == [
        str(soon_high.pk),
        str(day_critical.pk),
        str(day_low.pk),
        str(week_low.pk),
        str(request.pk),
    ]
    assert (page.total.value, page.total.at_least, page.has_next) == (5, False, False)
    by_risk = inbox_page(company=company, filters=InboxFilters(sort="risk"))
    assert [d.id for d in by_risk.decisions][:2] == [str(day_critical.pk), str(soon_high.pk)]


def test_205_pending_items_are_all_reachable_page_by_page(company):
    now = timezone.now()
    _bulk(company, 205, now=now)
    client = _client(company, "operator")
    seen: list[str] = []
    for page in (1, 2, 3, 4, 5):
        response = client.get("/console/inbox/", {"page": page})
        assert response.status_code == 200
        seen += _ids(response.content.decode())
    assert len(seen) == len(set(seen)) == 205
    expected = ApprovalItem.objects.filter(company=company).order_by("expires_at")
    assert seen == [str(pk) for pk in expected.values_list("pk", flat=True)]
    last = client.get("/console/inbox/", {"page": 5}).content.decode()
    assert "201–205 of 205" in last
    assert 'id="page-next"' not in last and 'id="page-prev"' in last
    first = client.get("/console/inbox/").content.decode()
    assert "1–50 of 205" in first and 'href="?page=2"' in first


def test_filters_narrow_by_created_and_expiry_range_agent_action_and_kind(company):
    now = timezone.now()
    agent, other = AgentFactory(company=company), AgentFactory(company=company)
    old = _item(company, ttl=timedelta(days=7), now=now - timedelta(days=3), title="old")
    mine = _item(company, ttl=timedelta(days=2), requester_agent=agent, title="mine")
    theirs = _item(company, ttl=timedelta(days=2), requester_agent=other, title="theirs")
    rotate = _item(company, ttl=timedelta(hours=2), action_type="keys:rotate", title="rotate")
    request = _write_request(company, agent)
    client = _client(company, "viewer")
    today = timezone.localdate()

    def ids(**query):
        response = client.get("/console/inbox/", query)
        assert response.status_code == 200, response.content
        return _ids(response.content.decode())

    assert ids(created_before=today - timedelta(days=1)) == [str(old.pk)]
    assert ids(created_after=today) == [
        str(rotate.pk),
        str(mine.pk),
        str(theirs.pk),
        str(request.pk),
    ]
    in_two_days = {
        "expires_after": today + timedelta(days=2),
        "expires_before": today + timedelta(days=3),
    }
    assert ids(**in_two_days) == [str(mine.pk), str(theirs.pk)]
    assert set(ids(agent=agent.pk)) == {str(mine.pk), str(request.pk)}
    assert ids(action_type="keys:rotate") == [str(rotate.pk)]
    assert ids(kind="write_request") == [str(request.pk)]
    assert ids(kind="approval", risk="high") == []
    assert ids(action_type="org_write_request") == [str(request.pk)]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"risk": "severe"}, "Risk: Select a valid choice. severe is not one of the available"),
        ({"status": "done"}, "Status: Select a valid choice. done is not one of the available"),
        ({"created_after": "yesterday"}, "Created from: Enter a valid date."),
        ({"page": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"agent": "abc"}, "Agent: Select a valid choice. abc is not one of the available"),
        ({"action_type": "nope"}, "Action type: Select a valid choice. nope is not one of the"),
        (
            {"created_after": "2030-01-02", "created_before": "2030-01-01"},
            "Created to: “Created from” must be on or before “Created to”.",
        ),
    ],
)
def test_a_bad_filter_value_is_a_form_error_not_a_500(company, query, message):
    _item(company, ttl=timedelta(hours=1))
    client = _client(company, "operator")
    response = client.get("/console/inbox/", query)
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="filter-errors"' in html
    assert message in html.replace("&quot;", '"')
    assert _ids(html) == []


def test_another_companys_agent_is_not_a_valid_agent_filter(company):
    foreign = AgentFactory(company=CompanyFactory())
    response = _client(company, "operator").get("/console/inbox/", {"agent": foreign.pk})
    assert response.status_code == 400
    assert f"Select a valid choice. {foreign.pk} is not one of the available" in (
        response.content.decode()
    )


def test_counts_are_bounded_and_the_query_count_is_flat(company, monkeypatch):
    now = timezone.now()
    client = _client(company, "operator")
    _bulk(company, 3, now=now)
    with CaptureQueriesContext(connection) as small:
        client.get("/console/inbox/")
    _bulk(company, 60, now=now - timedelta(minutes=1))
    monkeypatch.setattr(inbox, "COUNT_CAP", 40)
    with CaptureQueriesContext(connection) as large:
        html = client.get("/console/inbox/").content.decode()
    assert len(large.captured_queries) == len(small.captured_queries)
    assert "<strong>40+</strong> pending" in html
    assert "1–50 of 40+" in html
    assert 'id="page-next"' in html
    assert inbox.status_counts(company=company)["pending"] == inbox.BoundedCount(40, True)


def test_unswept_overdue_items_count_and_list_as_expired(company):
    now = timezone.now()
    overdue = _item(company, ttl=timedelta(minutes=1), now=now - timedelta(minutes=5))
    live = _item(company, ttl=timedelta(hours=1))
    counts = inbox.status_counts(company=company)
    assert {k: str(v) for k, v in counts.items()} == {
        "pending": "1",
        "approved": "0",
        "rejected": "0",
        "expired": "1",
    }
    assert [d.id for d in inbox_page(company=company).decisions] == [str(live.pk)]
    expired = inbox_page(company=company, filters=InboxFilters(status="expired"))
    assert [(d.id, d.status) for d in expired.decisions] == [(str(overdue.pk), "expired")]
    assert ApprovalItem.objects.get(pk=overdue.pk).status == "pending"  # a read never writes


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_each_role_of_the_company_sees_the_inbox_and_staff_of_another_sees_none(company, role):
    item = _item(company, ttl=timedelta(hours=1), title="Deploy billing v2")
    request = _write_request(company, AgentFactory(company=company))
    response = _client(company, role).get("/console/inbox/")
    assert response.status_code == 200
    assert _ids(response.content.decode()) == [str(item.pk), str(request.pk)]
    other = CompanyFactory()
    staff = _client(other, "admin", user__is_staff=True)
    foreign = staff.get("/console/inbox/")
    assert foreign.status_code == 200
    assert _ids(foreign.content.decode()) == []
    assert "Deploy billing v2" not in foreign.content.decode()
    assert staff.get(f"/console/inbox/items/{item.pk}").status_code == 404
    assert staff.get(f"/console/inbox/write-requests/{request.pk}").status_code == 404
    assert WriteAccessRequest.objects.get(pk=request.pk).status == "pending"
