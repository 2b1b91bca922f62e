"""Humans in the admin: writes go through the services, edits are new versions, nothing is
edited in place or deleted, requests are decided with a reason to reject."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from orgmemory.models import OperationLogEntry, OrgFact, WriteAccessRequest
from orgmemory.services.facts import ACTION_WRITE_DENIED, fact_publish
from orgmemory.services.write_requests import REASON_REQUIRED, write_request_file
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.persistence.factories import CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

FACTS = "/admin/orgmemory/orgfact/"
REQUESTS = "/admin/orgmemory/writeaccessrequest/"
LOG = "/admin/orgmemory/operationlogentry/"


@pytest.fixture
def operator(company):
    user = UserFactory(password=None, is_staff=True, is_superuser=True)
    MembershipFactory(company=company, user=user, role="admin")
    return user


@pytest.fixture
def admin_client(operator):
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def fact(company, operator):
    return fact_publish(
        company=company,
        actor=Principal.for_human(operator, company, "admin"),
        content="Releases ship on Tuesdays",
        category="procedure",
        tags=["release"],
    ).fact


@pytest.fixture
def pending(company, junior):
    return write_request_file(
        company=company,
        actor=Principal.for_agent(junior.agent),
        content="Use UTC everywhere",
        category="convention",
        justification="Timezone bugs in three incidents",
    )


def test_add_form_publishes_version_one_attributed_to_the_user(admin_client, company, operator):
    response = admin_client.post(
        FACTS + "add/",
        {
            "company": company.pk,
            "category": "core_policy",
            "content": "No commits to main",
            "tags": "git,policy",
        },
    )
    assert response.status_code == 302
    entry = OperationLogEntry.objects.get()
    assert (entry.version, entry.content, entry.tags) == (
        1,
        "No commits to main",
        ["git", "policy"],
    )
    assert (entry.author_is_human, entry.author_user_id) == (True, operator.pk)
    assert OrgFact.objects.get().content == "No commits to main"


def test_add_form_refuses_a_category_without_rule_and_writes_nothing(
    admin_client, company, operator
):
    response = admin_client.post(
        FACTS + "add/",
        {"company": company.pk, "category": "entity_definition", "content": "A user is…"},
    )
    assert response.status_code == 200
    assert "nobody may write it" in response.content.decode()
    assert OrgFact.objects.count() == 0
    # Form validation never writes: no "denied" audit row for a form that was not saved.
    assert not AuditEntry.objects.filter(action_type=ACTION_WRITE_DENIED).exists()


def test_edit_publishes_a_new_version_without_changing_the_old(admin_client, fact, operator):
    page = admin_client.get(f"{FACTS}{fact.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "version history" in html.lower()
    assert "Releases ship on Tuesdays" in html
    response = admin_client.post(
        f"{FACTS}{fact.pk}/change/",
        {
            "content": "Releases ship on Wednesdays",
            "tags": "release",
            "expected_version": 1,
            "operations-TOTAL_FORMS": 1,
            "operations-INITIAL_FORMS": 1,
            "operations-MIN_NUM_FORMS": 0,
            "operations-MAX_NUM_FORMS": 1000,
        },
    )
    assert response.status_code == 302
    rows = list(
        OperationLogEntry.objects.filter(fact_id=fact.pk)
        .order_by("version")
        .values_list("version", "content", "author_user_id")
    )
    assert rows == [
        (1, "Releases ship on Tuesdays", operator.pk),
        (2, "Releases ship on Wednesdays", operator.pk),
    ]
    fact.refresh_from_db()
    assert (fact.version, fact.content) == (2, "Releases ship on Wednesdays")


def test_edit_with_a_stale_version_changes_nothing(admin_client, company, fact, operator):
    fact_publish(
        company=company,
        actor=Principal.for_human(operator, company, "admin"),
        content="Concurrent edit",
        category="procedure",
        fact_id=fact.pk,
    )
    response = admin_client.post(
        f"{FACTS}{fact.pk}/change/",
        {
            "content": "My stale edit",
            "tags": "",
            "expected_version": 1,
            "operations-TOTAL_FORMS": 2,
            "operations-INITIAL_FORMS": 2,
            "operations-MIN_NUM_FORMS": 0,
            "operations-MAX_NUM_FORMS": 1000,
        },
        follow=True,
    )
    assert "not the expected version 1" in response.content.decode()
    assert OperationLogEntry.objects.filter(fact_id=fact.pk).count() == 2
    fact.refresh_from_db()
    assert fact.content == "Concurrent edit"


def test_retract_from_the_fact_page(admin_client, fact):
    response = admin_client.post(
        f"{FACTS}{fact.pk}/change/",
        {
            "content": fact.content,
            "tags": "release",
            "expected_version": 1,
            "retract": "on",
            "retract_reason": "obsolete",
            "operations-TOTAL_FORMS": 1,
            "operations-INITIAL_FORMS": 1,
            "operations-MIN_NUM_FORMS": 0,
            "operations-MAX_NUM_FORMS": 1000,
        },
    )
    assert response.status_code == 302
    fact.refresh_from_db()
    assert fact.retracted_at is not None
    assert OperationLogEntry.objects.get(fact_id=fact.pk, version=2).operation_type == "RETRACT"
    # A retracted fact is view-only.
    assert admin_client.post(f"{FACTS}{fact.pk}/change/", {"content": "x"}).status_code == 403


def test_no_delete_anywhere(admin_client, fact):
    entry = OperationLogEntry.objects.get(fact_id=fact.pk)
    assert admin_client.get(f"{FACTS}{fact.pk}/delete/").status_code == 403
    assert admin_client.post(f"{LOG}{entry.pk}/delete/").status_code == 403
    response = admin_client.post(
        FACTS, {"action": "delete_selected", "_selected_action": [fact.pk]}
    )
    assert OrgFact.objects.filter(pk=fact.pk).exists()
    assert response.status_code in (200, 302)


def test_log_entries_are_read_only(admin_client, fact):
    entry = OperationLogEntry.objects.get(fact_id=fact.pk)
    assert admin_client.get(LOG).status_code == 200
    view = admin_client.get(f"{LOG}{entry.pk}/change/")
    assert view.status_code == 200
    assert 'name="_save"' not in view.content.decode()
    assert admin_client.post(f"{LOG}{entry.pk}/change/", {"content": "x"}).status_code == 403
    assert admin_client.get(LOG + "add/").status_code == 403
    entry.refresh_from_db()
    assert entry.content == "Releases ship on Tuesdays"


def test_request_page_rejects_only_with_a_reason(admin_client, pending, operator):
    url = f"{REQUESTS}{pending.pk}/change/"
    response = admin_client.post(url, {"decision": "reject", "reason": "  "})
    assert response.status_code == 200
    assert REASON_REQUIRED in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert (
        admin_client.post(
            url, {"decision": "reject", "reason": "Already in the handbook"}
        ).status_code
        == 302
    )
    pending.refresh_from_db()
    assert (pending.status, pending.decision_reason, pending.decided_by_id) == (
        "rejected",
        "Already in the handbook",
        operator.pk,
    )
    # Decided: view only.
    assert admin_client.post(url, {"decision": "approve"}).status_code == 403


def test_request_page_approves_and_publishes(admin_client, pending, operator, junior):
    response = admin_client.post(f"{REQUESTS}{pending.pk}/change/", {"decision": "approve"})
    assert response.status_code == 302
    pending.refresh_from_db()
    entry = pending.published_operation
    assert (entry.author_agent_id, entry.approved_by_id, entry.content) == (
        junior.agent.pk,
        operator.pk,
        "Use UTC everywhere",
    )


def test_approve_action(admin_client, pending, operator):
    response = admin_client.post(
        REQUESTS, {"action": "approve_selected", "_selected_action": [pending.pk]}
    )
    assert response.status_code == 302
    pending.refresh_from_db()
    assert (pending.status, pending.decided_by_id) == ("approved", operator.pk)


def test_reject_action_asks_for_a_reason(admin_client, pending, operator):
    ask = admin_client.post(
        REQUESTS, {"action": "reject_selected", "_selected_action": [pending.pk]}
    )
    assert ask.status_code == 200
    assert "Reject 1 write-access request" in ask.content.decode()
    blank = admin_client.post(
        REQUESTS,
        {
            "action": "reject_selected",
            "_selected_action": [pending.pk],
            "apply": "1",
            "reason": " ",
        },
    )
    assert blank.status_code == 200
    pending.refresh_from_db()
    assert pending.status == "pending"
    done = admin_client.post(
        REQUESTS,
        {
            "action": "reject_selected",
            "_selected_action": [pending.pk],
            "apply": "1",
            "reason": "Not our convention",
        },
    )
    assert done.status_code == 302
    pending.refresh_from_db()
    assert (pending.status, pending.decision_reason, pending.decided_by_id) == (
        "rejected",
        "Not our convention",
        operator.pk,
    )
    assert WriteAccessRequest.objects.filter(status="pending").count() == 0


def test_staff_see_only_their_companies(fact):
    other = CompanyFactory()
    user = UserFactory(password=None, is_staff=True)
    MembershipFactory(company=other, user=user, role="operator")
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_orgfact", "change_orgfact"])
    )
    client = Client()
    client.force_login(user)
    assert client.get(FACTS).status_code == 200
    assert "Releases ship on Tuesdays" not in client.get(FACTS).content.decode()
    assert client.get(f"{FACTS}{fact.pk}/change/").status_code == 302  # not found → redirect
