"""The console's pages as a product (issue 33 item 3), read with the Django test client:
where a member of several companies lands, the order of the policies page, the agents
table's short roles, the cost page's empty states, the styled Not Found page, the wiki link
only while the export is on, and the config form's labels, help and map keys."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from memory.interfaces.console.agents import short_role
from orgmemory.services.approvals import approval_request
from orgmemory.services.policies import policy_add
from persistence.console.access import SESSION_KEY
from persistence.console.config_docs import field_label, parse_config_doc
from persistence.console.config_form import changed_from_default, config_form_schema
from persistence.principal import Principal
from persistence.services.companies import company_config_for_editing, company_config_set
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    CostRecordFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _pending(company, title="Deploy billing v2"):
    return approval_request(
        company=company,
        action_type="deploy:production",
        title=title,
        risk_level="high",
        source="api",
        requested_by="coder",
    )


def test_a_member_of_several_companies_lands_on_the_one_with_pending_work():
    user = UserFactory(username="root", is_superuser=True, is_staff=True)
    empty = CompanyFactory(name="Aardvark Labs", slug="aardvark")  # first by name
    busy = CompanyFactory(name="Zeta Robotics", slug="zeta")
    for company in (empty, busy):
        MembershipFactory(company=company, user=user, role="owner")
    _pending(busy)
    client = _login(user)

    page = client.get("/console/", follow=True)

    assert page.status_code == 200
    assert page.context["request"].console.company == busy
    assert [d.title for d in page.context["inbox"].decisions] == ["Deploy billing v2"]
    assert client.session[SESSION_KEY] == busy.pk
    # a choice made with the switcher is kept, work elsewhere or not
    client.post("/console/company", {"company": "aardvark", "next": "/console/inbox/"})
    assert client.get("/console/inbox/").context["request"].console.company == empty


def test_without_pending_work_anywhere_the_first_company_by_name_stays():
    user = UserFactory(username="root")
    first = CompanyFactory(name="Aardvark Labs", slug="aardvark")
    MembershipFactory(company=first, user=user, role="owner")
    MembershipFactory(company=CompanyFactory(name="Zeta", slug="zeta"), user=user, role="owner")
    client = _login(user)
    assert client.get("/console/inbox/").context["request"].console.company == first
    assert SESSION_KEY not in client.session


def test_policies_page_leads_with_the_policies_and_puts_the_unversioned_exception_after():
    company = CompanyFactory()
    admin = MembershipFactory(company=company, role="admin")
    company_config_set(company=company, data={"org_memory": {"core_policies": ["Be kind."]}})
    policy_add(
        company=company,
        actor=Principal.for_human(admin.user, company, "admin"),
        content="Never push to main.",
    )
    html = _login(admin.user).get("/console/policies/").content.decode()
    positions = [
        html.index(marker)
        for marker in ('id="policy-list"', 'id="add-h"', 'id="unv-h"', 'id="block-h"')
    ]
    assert positions == sorted(positions)
    assert 'data-confirm="Retire this core policy?' in html


@pytest.mark.parametrize(
    ("role", "short"),
    [
        ("Backend engineer", "Backend engineer"),
        ("Backend engineer. Owns the billing services and their deploys.", "Backend engineer…"),
        ("Release manager (billing, payments)", "Release manager…"),
        (
            "Plans each sprint's work and splits it into tickets for the coders",
            "Plans each sprint's work and…",
        ),
        ("", ""),
    ],
)
def test_short_role(role, short):
    assert short_role(role) == short


def test_agents_table_shows_the_short_role_and_the_whole_one_as_its_tooltip():
    company = CompanyFactory()
    viewer = MembershipFactory(company=company, role="viewer")
    role = "Backend engineer. Owns the billing services and their deploys."
    AgentFactory(company=company, name="coder", role=role)
    html = _login(viewer.user).get("/console/agents/").content.decode()
    assert f'<span title="{role}">Backend engineer…</span>' in html


def test_costs_page_says_what_is_missing_instead_of_empty_charts():
    company = CompanyFactory(slug="acme")
    viewer = MembershipFactory(company=company, role="viewer")
    client = _login(viewer.user)
    html = client.get("/dashboard/costs").content.decode()
    assert 'id="costs-empty"' in html and "<table" not in html and "<svg" not in html
    CostRecordFactory(company=company, cost=Decimal("0"), occurred_at=timezone.now())
    html = client.get("/dashboard/costs").content.decode()
    assert 'id="costs-per-agent-empty"' in html and "<table" not in html and "<svg" not in html
    CostRecordFactory(company=company, cost=Decimal("0.42"), occurred_at=timezone.now())
    html = client.get("/dashboard/costs").content.decode()
    assert "costs-per-agent-empty" not in html and "<table" in html and "<svg" in html


def test_wiki_link_only_while_the_export_is_on_and_its_address_answers_a_styled_page():
    company = CompanyFactory()
    operator = MembershipFactory(company=company, role="operator")
    client = _login(operator.user)
    assert 'id="wiki-zip-link"' not in client.get("/console/memories/executions").content.decode()
    missing = client.get("/console/memories/wiki.zip")
    assert missing.status_code == 404
    body = missing.content.decode()
    assert "<h1>Not found</h1>" in body and "console/console.css" in body
    assert "This company has no wiki export yet" in body
    assert 'aria-label="Console sections"' in body
    company_config_set(
        company=company, data={"memory": {"consolidation": {"wiki_export": {"enabled": True}}}}
    )
    assert 'id="wiki-zip-link"' in client.get("/console/memories/executions").content.decode()
    # an address that is no page at all is the same styled page
    unknown = client.get("/console/no-such-page")
    assert unknown.status_code == 404 and "There is no page at" in unknown.content.decode()


def test_config_form_labels_help_from_the_docs_and_map_keys():
    schema = config_form_schema()
    memory = schema["properties"]["memory"]["properties"]
    dream = memory["dream"]["properties"]["max_core_tokens"]
    assert dream["title"] == "Max core tokens"
    assert dream["help_text"].startswith("50..8000: the stored core is cut to fit")
    assert dream["help_text"].endswith("YAML: memory.dream.max_core_tokens; default: 600.")
    assert memory["retrieval"]["properties"]["rrf_k"]["title"] == "RRF k"
    rules = schema["properties"]["org_memory"]["properties"]["write_access"]["properties"]["rules"]
    # the rules' values take no title, so the widget titles each with its key (adr, …)
    assert "title" not in rules["additionalProperties"]
    assert "Keys: core_policy, adr, procedure, convention, entity_definition." in rules["help_text"]
    assert field_label("llm_group_threshold") == "LLM group threshold"
    # a section documented on its own page: docs/operating/fine-tune.md's Configuration table
    min_gain = memory["fine_tune"]["properties"]["min_gain"]["help_text"]
    assert min_gain.startswith("the nDCG@10 gain an adapter needs")


def test_config_doc_parser_reads_tables_yaml_comments_and_bullets():
    doc = "\n".join(
        [
            "### Defaults and knobs that act",
            "- `level` is the memory level of a new agent",
            "  created without one.",
            "### memory.procedural",
            "| key | default | meaning |",
            "|---|---|---|",
            "| `temperature`, `max_tokens` | `0.3`, `1500` | sent with the proposer call |",
            "| `capture.min_quality_score` / `percentile_window` | `8.0` / `50` | quality bar |",
            "| `pruning.strategy` (or `pruning: ttl`) | `hybrid` | `none` \\| `ttl` |",
            "| `model` | x | |",
            "```yaml",
            "memory:",
            "  dream:",
            "    interval: daily            # hourly | daily",
            "    lookback_days: 7",
            "```",
        ]
    )
    assert parse_config_doc(doc) == {
        "memory.level": "level is the memory level of a new agent created without one.",
        "memory.procedural.temperature": "sent with the proposer call",
        "memory.procedural.max_tokens": "sent with the proposer call",
        "memory.procedural.capture.min_quality_score": "quality bar",
        "memory.procedural.capture.percentile_window": "quality bar",
        "memory.procedural.pruning.strategy": "none | ttl",
        "memory.dream.interval": "hourly | daily",
    }


def test_changed_from_default_names_only_the_changed_fields():
    company = CompanyFactory()
    assert changed_from_default(company_config_for_editing(company)) == []
    company_config_set(
        company=company,
        data={
            "memory": {"retrieval": {"rrf_k": 30}},
            "org_memory": {"write_access": {"rules": {"adr": {"human_allowed": True}}}},
        },
    )
    removed = [  # the default rules this config no longer has
        f"org_memory.write_access.rules.{category}.{field}"
        for category in ("convention", "core_policy", "procedure")
        for field in ("allowed_departments", "allowed_roles", "allowed_seniority", "human_allowed")
    ]
    assert changed_from_default(company_config_for_editing(company)) == [
        "memory.retrieval.rrf_k",
        "org_memory.write_access.rules.adr.allowed_seniority",
        *removed,
    ]
    json.dumps(config_form_schema())  # the widget's schema stays JSON
