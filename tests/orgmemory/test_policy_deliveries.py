"""Which agents received the core policy block last: one upserted row per agent, written by
``/memories/context`` when it pinned the block, and shown on the Core policies page."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from orgmemory.models import PolicyDelivery
from orgmemory.selectors.policies import block_revision, pinned_core_policies
from orgmemory.services.policies import policy_add, policy_edit
from orgmemory.services.policy_deliveries import policy_delivery_record
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/console/policies/"
CONTEXT = "/api/v1/memories/context"


def _admin(company):
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    return Principal.for_human(membership.user, company, "admin")


def _page(company, role="viewer") -> str:
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    return client.get(URL).content.decode()


def _context(caller, **body):
    response = caller.client.post(
        CONTEXT, {"query": "deploys", "token_budget": 500, **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def _row(agent) -> tuple:
    row = PolicyDelivery.objects.get(agent=agent)
    return row.company_id, row.revision, list(row.versions)


def test_a_context_call_records_the_revision_once_per_agent(caller, peer):
    admin = _admin(caller.company)
    first = policy_add(company=caller.company, actor=admin, content="Never push to main")
    block = pinned_core_policies(company=caller.company)
    assert block.revision == block_revision(block.text)
    assert block.versions == (f"{first.fact_id}:v1",)

    _context(caller)
    after_first = PolicyDelivery.objects.get(agent=caller.agent).delivered_at
    _context(caller)
    assert PolicyDelivery.objects.count() == 1  # upserted, not a row per request
    assert _row(caller.agent) == (caller.company.pk, block.revision, [f"{first.fact_id}:v1"])
    assert PolicyDelivery.objects.get(agent=caller.agent).delivered_at >= after_first

    policy_edit(
        company=caller.company,
        actor=admin,
        fact_id=first.fact_id,
        content="Never force-push to main",
        expected_version=1,
    )
    _context(peer)
    new = pinned_core_policies(company=caller.company)
    assert _row(peer.agent) == (caller.company.pk, new.revision, [f"{first.fact_id}:v2"])
    assert _row(caller.agent)[1] == block.revision  # the caller still holds the old block

    page = _page(caller.company)
    caller_row = page.split(f'id="delivery-{caller.agent.pk}"')[1].split("</tr>")[0]
    peer_row = page.split(f'id="delivery-{peer.agent.pk}"')[1].split("</tr>")[0]
    assert caller.agent.name in caller_row and "older revision" in caller_row
    assert block.revision[:12] in caller_row
    assert peer.agent.name in peer_row and ">current<" in peer_row
    assert "is not recorded yet" not in page


@pytest.mark.parametrize("strategy", ["tool_based", "self_editing"])
def test_every_strategy_records_its_pinned_block(caller, strategy):
    company_config_set(
        company=caller.company, data={"memory": {"retrieval": {"strategy": strategy}}}
    )
    policy_add(company=caller.company, actor=_admin(caller.company), content="Be kind")
    body = _context(caller)
    block = pinned_core_policies(company=caller.company)
    assert body["messages"][0]["content"] == block.text
    assert _row(caller.agent)[1] == block.revision


def test_nothing_is_recorded_without_a_pinned_block(caller):
    _context(caller)  # no core policies
    policy_add(company=caller.company, actor=_admin(caller.company), content="Be kind")
    _context(caller, include_org=False)  # the block was not pinned
    assert not PolicyDelivery.objects.exists()


def test_a_slower_earlier_delivery_does_not_overwrite_a_later_one(caller):
    policy_add(company=caller.company, actor=_admin(caller.company), content="Be kind")
    block = pinned_core_policies(company=caller.company)
    later = timezone.now()
    policy_delivery_record(agent=caller.agent, block=block, now=later)
    stale = block.__class__(text="old", revision=block_revision("old"), versions=("x:v1",))
    policy_delivery_record(agent=caller.agent, block=stale, now=later - timedelta(seconds=1))
    row = PolicyDelivery.objects.get(agent=caller.agent)
    assert (row.revision, row.delivered_at) == (block.revision, later)


def test_the_database_refuses_a_revision_that_is_not_a_sha256(caller):
    with pytest.raises(IntegrityError), transaction.atomic():
        PolicyDelivery.objects.create(
            company=caller.company, agent=caller.agent, revision="v1", delivered_at=timezone.now()
        )
    assert not PolicyDelivery.objects.exists()


def test_page_without_policies_or_deliveries_shows_empty_states(company):
    page = _page(company, role="admin")
    assert "<li" not in page.split('aria-label="Policies"')[1].split("</section>")[0]
    assert "None." not in page
    assert 'id="policy-list-empty">No core policies yet. Add the first one below' in page
    assert 'id="policy-deliveries-empty">No agent has received a core policy block yet' in page
    viewer = _page(company)
    assert 'id="policy-list-empty">No core policies yet.</p>' in viewer


def test_other_companies_deliveries_are_not_shown(caller):
    policy_add(company=caller.company, actor=_admin(caller.company), content="Be kind")
    _context(caller)
    other = CompanyFactory()
    policy_add(company=other, actor=_admin(other), content="Be kind")
    page = _page(other)
    assert f'id="delivery-{caller.agent.pk}"' not in page
