"""The per-process parsed-config cache searches read: reused while ``config_revision`` stays,
re-parsed when a change bumps it, never shared between companies."""

import pytest

from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.services.companies import company_config_set
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def test_the_parsed_config_is_reused_until_a_change_bumps_the_revision():
    company = CompanyFactory()
    first = company_config(company)
    assert company_config(Company.objects.get(pk=company.pk)) is first
    revision = company.config_revision
    company_config_set(company=company, data={"memory": {"retrieval": {"rrf_k": 20}}})
    fresh = Company.objects.get(pk=company.pk)
    assert fresh.config_revision == revision + 1
    changed = company_config(fresh)
    assert changed is not first and changed.memory.retrieval.rrf_k == 20
    assert first.memory.retrieval.rrf_k == 10
    assert company_config(CompanyFactory()).memory.retrieval.rrf_k == 10  # another company


def test_a_search_follows_a_config_change():
    agent = AgentFactory()
    colleague = AgentFactory(company=agent.company)
    shared = MemoryFactory(agent=colleague, is_shared=True, content="deploy on fridays")
    query = MemoryQuery(text="deploy")
    before = memory_search(agent=agent, query=query, legs=("sparse",))
    assert [hit.memory.pk for hit in before.hits] == [shared.pk]
    company_config_set(
        company=agent.company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    agent.company.refresh_from_db()
    after = memory_search(agent=agent, query=query, legs=("sparse",))
    assert after.hits == []
