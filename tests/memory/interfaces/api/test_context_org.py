"""POST /memories/context with the org's knowledge: core policies pinned, facts ranked."""

import pytest

from memory.prompting.strategies import CONTEXT_WRITE_INSTRUCTION
from orgmemory.services.facts import fact_publish
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories/context"
POLICIES = ["All code must pass review before merging.", "Never log customer data."]
POLICY_BLOCK = (
    "## Company policies (always apply)\n"
    "- All code must pass review before merging.\n"
    "- Never log customer data."
)


@pytest.fixture
def human(company):
    membership = MembershipFactory(company=company, role="admin")
    return Principal.for_human(membership.user, company, membership.role)


def context(caller, **body):
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def store(caller, content):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": "semantic"}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def test_core_policies_come_first_even_when_the_budget_is_tight(caller, human):
    company_config_set(company=caller.company, data={"org_memory": {"core_policies": POLICIES}})
    fact_publish(
        company=caller.company,
        actor=human,
        content="Deploys need a second approver on Fridays.",
        category="core_policy",
    )
    store(caller, "The billing service deploys every Friday at noon UTC.")
    body = context(caller, query="billing deploy", token_budget=1)
    assert body["messages"] == [
        {
            "role": "system",
            "content": POLICY_BLOCK + "\n- Deploys need a second approver on Fridays.",
        },
        {"role": "system", "content": CONTEXT_WRITE_INSTRUCTION},
    ]
    assert body["included"] == []
    assert [entry["kind"] for entry in body["dropped"]] == ["memory"]
    assert body["tokens_used"] > body["token_budget"]  # policies are never dropped


def test_relevant_extended_facts_compete_with_memories(caller, human):
    fact = fact_publish(
        company=caller.company,
        actor=human,
        content="ADR-7: the billing service deploys through the blue/green pipeline.",
        category="adr",
    )
    fact_publish(
        company=caller.company,
        actor=human,
        content="Office plants are watered on Mondays.",
        category="convention",
    )
    memory_id = store(caller, "The billing service deploys every Friday at noon UTC.")
    body = context(caller, query="how does the billing service deploy", token_budget=2000)
    included = {(entry["kind"], entry["id"]) for entry in body["included"]}
    assert included == {("memory", memory_id), ("org_fact", f"fact:{fact.fact_id}")}
    fenced = body["messages"][-1]["content"]
    assert '<memory-entry meta="org adr">\nADR-7: the billing service' in fenced
    assert "Office plants" not in fenced


def test_include_org_false_leaves_org_knowledge_out(caller, outsider, human):
    company_config_set(company=caller.company, data={"org_memory": {"core_policies": POLICIES}})
    guidance = [{"role": "system", "content": CONTEXT_WRITE_INSTRUCTION}]
    body = context(caller, query="billing deploy", token_budget=100, include_org=False)
    assert body["messages"] == guidance
    # Another company's policies never reach this company's agents.
    assert context(outsider, query="billing deploy", token_budget=100)["messages"] == guidance
