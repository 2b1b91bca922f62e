"""Shared knowledge and org facts browsable in the console: category filter, pages, a fact's
history; every role of the company reads, another company's staff sees none of it."""

import pytest
from django.test import Client

from memory.core.models.memory import Memory
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _publish(company, content, category="procedure", **kwargs):
    admin = MembershipFactory(company=company, role="admin", user__password=None).user
    principal = Principal.for_human(admin, company, "admin")
    return fact_publish(
        company=company, actor=principal, content=content, category=category, **kwargs
    )


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_org_facts_by_category_for_every_role(company, role):
    _publish(company, "Deploys need two approvals.", "procedure")
    _publish(company, "We use PostgreSQL.", "adr")
    gone = _publish(company, "We use MySQL.", "adr")
    fact_retract(
        company=company,
        actor=Principal.for_human(gone.author_user, company, "admin"),
        fact_id=gone.fact_id,
    )
    client = _client(company, role)
    everything = client.get("/console/facts/").content.decode()
    assert everything.count('class="fact-row"') == 2
    assert "We use MySQL." not in everything  # retracted
    adrs = client.get("/console/facts/?category=adr").content.decode()
    assert adrs.count('class="fact-row"') == 1 and "We use PostgreSQL." in adrs
    assert '<form method="post"' not in adrs.split("</header>")[1]  # read-only


def test_org_facts_pages_and_bad_filters(company, monkeypatch):
    monkeypatch.setattr("orgmemory.console.facts.PAGE", 2)
    for n in range(3):
        _publish(company, f"Convention {n}.", "convention")
    viewer = _client(company, "viewer")
    first = viewer.get("/console/facts/?category=convention").content.decode()
    assert first.count('class="fact-row"') == 2
    assert 'href="?category=convention&amp;page=2"' in first
    second = viewer.get("/console/facts/?category=convention&page=2").content.decode()
    assert second.count('class="fact-row"') == 1 and 'id="page-next"' not in second
    assert viewer.get("/console/facts/?page=3").status_code == 404
    bad = viewer.get("/console/facts/?category=gossip")
    assert bad.status_code == 400
    assert "Select a valid choice. gossip is not one of the available choices." in (
        bad.content.decode()
    )
    assert viewer.get("/console/facts/?page=0").status_code == 400


def test_a_facts_page_shows_its_history_and_outsiders_get_404(company):
    first = _publish(company, "Deploys need one approval.", "procedure")
    _publish(
        company,
        "Deploys need two approvals.",
        "procedure",
        fact_id=first.fact_id,
        expected_version=1,
    )
    viewer = _client(company, "viewer")
    page = viewer.get(f"/console/facts/{first.fact_id}")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<p class="text" id="fact-content">Deploys need two approvals.</p>' in html
    assert html.count('class="version-row"') == 2
    outsider = _client(CompanyFactory(), "owner")
    assert outsider.get(f"/console/facts/{first.fact_id}").status_code == 404
    assert "Deploys need" not in outsider.get("/console/facts/").content.decode()


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
def test_shared_knowledge_by_category_for_every_role(company, role, monkeypatch):
    monkeypatch.setattr("memory.interfaces.console.views.PAGE", 2)
    agent = AgentFactory(company=company, name="writer-bot")
    for n in range(3):
        MemoryFactory(agent=agent, is_shared=True, category="semantic", content=f"Shared {n}.")
    MemoryFactory(agent=agent, is_shared=True, category="procedural", content="How to deploy.")
    MemoryFactory(agent=agent, is_shared=False, category="semantic", content="Private note.")
    MemoryFactory(is_shared=True, category="semantic", content="Other company's entry.")
    client = _client(company, role)
    first = client.get("/console/memories/shared?category=semantic").content.decode()
    assert first.count('class="shared-row"') == 2
    assert "Shared 2." in first and "Shared 1." in first  # newest first
    assert "writer-bot" in first and 'href="?category=semantic&amp;page=2"' in first
    second = client.get("/console/memories/shared?category=semantic&page=2").content.decode()
    assert second.count('class="shared-row"') == 1 and "Shared 0." in second
    everything = client.get("/console/memories/shared?page=2").content.decode()
    assert "Private note." not in everything and "Other company's entry." not in everything
    assert client.get("/console/memories/shared?category=nope").status_code == 400


def test_shared_knowledge_stays_listed_for_humans_while_agents_have_it_off(company):
    MemoryFactory(agent=AgentFactory(company=company), is_shared=True, content="Ours.")
    client = _client(company, "viewer")
    assert 'id="shared-off"' not in client.get("/console/memories/shared").content.decode()
    company_config_set(
        company=company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    html = client.get("/console/memories/shared").content.decode()
    assert html.count('class="shared-row"') == 1 and "Ours." in html
    assert (
        '<p class="message warning" role="status" id="shared-off">Shared knowledge is off for '
        "this company (<code>memory.options.shared_knowledge_base: false</code>): agents "
        "neither find nor publish these entries until it is turned on again.</p>"
    ) in html
    entry = Memory.objects.get(content="Ours.")
    assert client.get(f"/console/memories/shared/{entry.pk}").status_code == 200


def test_shared_knowledge_of_another_company_is_not_listed(company):
    MemoryFactory(agent=AgentFactory(company=company), is_shared=True, content="Ours.")
    html = _client(CompanyFactory(), "owner").get("/console/memories/shared").content.decode()
    assert "Ours." not in html and 'class="shared-row"' not in html
