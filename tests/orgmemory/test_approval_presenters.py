"""Approval presenters (issue 34 item 4): org memory decides items without naming a proposer;
what an action type's items may have edited, how long they wait and how their page reads is
what the app filing them registered."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client

from memory.procedural.evolver.presentation import EVOLVER_PRESENTER, VERDICTS
from memory.procedural.evolver.services import ACTION_CONFLICT, ACTION_PROMOTION
from memory.procedural.services.org_pool_proposals import (
    ACTION_ORG_POOL,
    ACTION_ORG_POOL_CONFLICT,
    LESSON_PRESENTER,
)
from orgmemory.approval_models import ApprovalDecision
from orgmemory.approval_presenters import (
    DEFAULT_PRESENTER,
    ApprovalPresenter,
    EditableField,
    VerdictText,
    presenter_for,
    register_approval_presenter,
)
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide, approval_request
from persistence.principal import Principal
from synthorg.errors import InvalidInputError
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

ORGMEMORY = Path(__file__).resolve().parents[2] / "orgmemory"

TEST_PRESENTER = ApprovalPresenter(
    editable=(
        EditableField("summary", "Summary", 20),
        EditableField("hosts", "Hosts", 10, many=True, max_items=2, hint="one per line"),
    ),
    stale_on_edit=("rendered",),
    ttl=timedelta(hours=3),
    verdicts={"RISKY": VerdictText("Risky change", "It touches production.", "Approving ships.")},
    approve_hint="Approving ships the change to the hosts below.",
)


@pytest.fixture(autouse=True)
def _test_presenter():
    register_approval_presenter("test:presented", TEST_PRESENTER)


def _operator(company):
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    return Principal.for_human(membership.user, company, "operator")


def _item(company, action_type="test:presented", **overrides):
    fields = {
        "title": "Ship the cache",
        "risk_level": "medium",
        "source": "api",
        "requested_by": "release-bot",
        "evidence": {"verdict": "RISKY"},
        "metadata": {
            "proposal": {"summary": "ship it", "hosts": ["a", "b"], "rendered": "ship it: a, b"}
        },
    }
    fields.update(overrides)
    return approval_request(company=company, action_type=action_type, **fields)


def test_the_proposers_register_their_presenters_beside_their_appliers():
    assert presenter_for(ACTION_PROMOTION) is EVOLVER_PRESENTER
    assert presenter_for(ACTION_CONFLICT) is EVOLVER_PRESENTER
    assert presenter_for(ACTION_ORG_POOL) is LESSON_PRESENTER
    assert presenter_for(ACTION_ORG_POOL_CONFLICT) is LESSON_PRESENTER
    assert EVOLVER_PRESENTER.ttl == LESSON_PRESENTER.ttl == timedelta(days=7)
    assert EVOLVER_PRESENTER.verdicts is VERDICTS
    assert presenter_for("deploy:production") is DEFAULT_PRESENTER


def test_orgmemory_names_no_proposer():
    """The evolver's and the lesson pool's action types, tiers and verdicts live with them."""
    named = {}
    for path in [*ORGMEMORY.rglob("*.py"), *ORGMEMORY.rglob("*.html")]:
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        for word in ("skill_evolver", "procedural_lesson", "execution_steps", "discovery"):
            if word in text:
                named.setdefault(word, []).append(str(path.relative_to(ORGMEMORY)))
    assert named == {}


def test_the_presenter_sets_the_default_ttl_and_an_unregistered_type_gets_one_day(company):
    presented = _item(company)
    assert presented.expires_at - presented.created_at == timedelta(hours=3)
    plain = _item(company, action_type="deploy:production")
    assert plain.expires_at - plain.created_at == timedelta(days=1)


def test_an_unregistered_action_type_is_never_edited_even_with_a_proposal(company):
    """Regression: org memory used to let any item carrying ``metadata["proposal"]`` tiers be
    edited (an agent's API item included); only a presenter's editable fields are now."""
    item = _item(
        company,
        action_type="deploy:production",
        metadata={"proposal": {"action": "deploy v2", "discovery": "x"}},
    )
    with pytest.raises(InvalidInputError) as caught:
        approval_decide(
            company=company,
            actor=_operator(company),
            item_id=item.pk,
            decision="approve",
            edits={"action": "deploy v3"},
        )
    assert caught.value.code == "approval_not_editable"
    item.refresh_from_db()
    assert (item.status, item.metadata["proposal"]["action"]) == ("pending", "deploy v2")


@pytest.mark.parametrize(
    ("edits", "field", "message"),
    [
        ({"summary": "x" * 21}, "summary", "summary may be at most 20 characters."),
        ({"summary": "  "}, "summary", "summary may not be blank."),
        ({"hosts": ["a", "b", "c"]}, "hosts", "hosts must be 1 to 2 non-blank lines."),
        ({"hosts": "a"}, "hosts", "hosts must be 1 to 2 non-blank lines."),
        ({"hosts": ["a" * 11]}, "hosts", "hosts may be at most 10 characters."),
        ({"rendered": "x"}, "rendered", "rendered is not an editable part of this proposal."),
    ],
)
def test_edits_are_held_to_the_presenters_fields(company, edits, field, message):
    item = _item(company)
    with pytest.raises(InvalidInputError) as caught:
        approval_decide(
            company=company,
            actor=_operator(company),
            item_id=item.pk,
            decision="approve",
            edits=edits,
        )
    assert (caught.value.code, caught.value.detail) == ("invalid_edit", message)
    assert caught.value.errors[0]["field"] == field
    assert ApprovalItem.objects.get(pk=item.pk).status == "pending"


def test_an_edit_replaces_the_fields_and_drops_the_stale_rendering(company):
    item = _item(company)
    approval_decide(
        company=company,
        actor=_operator(company),
        item_id=item.pk,
        decision="approve",
        edits={"summary": " ship v2 ", "hosts": ["a", "b"]},
    )
    item.refresh_from_db()
    assert item.metadata["proposal"] == {"summary": "ship v2", "hosts": ["a", "b"]}
    assert item.metadata["original_proposal"]["rendered"] == "ship it: a, b"
    record = ApprovalDecision.objects.get(item=item)
    assert record.edits["fields"] == {"summary": {"before": "ship it", "after": "ship v2"}}


def _client(company):
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    client = Client()
    client.force_login(membership.user)
    return client


def test_the_item_page_shows_the_presenters_fields_verdict_and_hint(company):
    item = _item(company)
    page = _client(company).get(f"/console/inbox/items/{item.pk}").content.decode()
    assert '<textarea id="edit-summary" name="edit_summary">ship it</textarea>' in page
    assert '<textarea id="edit-hosts" name="edit_hosts">a\nb</textarea>' in page
    assert 'name="edit_rendered"' not in page
    assert "Approving ships the change to the hosts below." in page
    assert (
        "<strong>Risky change</strong>" in page
        and "It touches production. Approving ships." in page
    )
    # no template registered: the proposal as filed
    assert '<dt>rendered</dt><dd class="text">ship it: a, b</dd>' in page
    assert "<li>a</li><li>b</li>" in page


def test_the_console_posts_a_many_field_one_item_per_line(company):
    item = _item(company)
    response = _client(company).post(
        f"/console/inbox/items/{item.pk}/decide",
        {"decision": "approve", "edit_summary": "ship it", "edit_hosts": "c\n\nd\n"},
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.metadata["proposal"]["hosts"] == ["c", "d"]


def test_a_refused_edit_is_shown_with_what_the_approver_typed(company):
    item = _item(company)
    response = _client(company).post(
        f"/console/inbox/items/{item.pk}/decide",
        {"decision": "approve", "edit_summary": "s", "edit_hosts": "a\nb\nc"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "hosts must be 1 to 2 non-blank lines." in page
    assert '<textarea id="edit-hosts" name="edit_hosts">a\nb\nc</textarea>' in page
    assert '<textarea id="edit-summary" name="edit_summary">s</textarea>' in page
    assert ApprovalItem.objects.get(pk=item.pk).status == "pending"


def test_an_agent_may_not_request_an_action_type_an_app_applies(company, caller):
    """Regression: an agent could file ``skill_evolver:org_promotion`` with a proposal of its
    own through the API, and approving it published that text as an org procedure on the
    approver's behalf (the applier ran). Action types with an applier are their app's."""
    body = {
        "title": "Org skill",
        "risk_level": "low",
        "metadata": {"proposal": {"discovery": "d", "condition": "c", "action": "a"}},
    }
    for action_type in (ACTION_PROMOTION, ACTION_CONFLICT, ACTION_ORG_POOL):
        response = caller.client.post(
            "/api/v1/approvals", {**body, "action_type": action_type}, format="json"
        )
        assert (response.status_code, response.json()["code"]) == (400, "action_type_reserved")
        assert [e["field"] for e in response.json()["errors"]] == ["action_type"]
    assert not ApprovalItem.objects.exists()
    response = caller.client.post(
        "/api/v1/approvals", {**body, "action_type": "test:presented"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["action_type"] == "test:presented"
