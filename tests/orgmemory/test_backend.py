"""The OrgMemoryBackend protocol over Postgres (hybrid prompt + retrieval)."""

import pytest
from asgiref.sync import async_to_sync

from orgmemory.backend import OrgMemoryBackend, PostgresOrgMemoryBackend
from orgmemory.domain import OrgFactAuthor, OrgFactWriteRequest, OrgMemoryQuery
from orgmemory.models import OrgFact
from orgmemory.write_access import OrgMemoryAccessDeniedError
from persistence.services.companies import company_config_set
from synthorg.errors import AccessDeniedError, ServiceUnavailableError

pytestmark = pytest.mark.django_db


def _author(caller):
    return OrgFactAuthor(agent_id=str(caller.agent.pk), seniority=caller.agent.seniority)


def test_protocol_lifecycle_write_query_and_policies(company, senior, junior, human, outsider):
    company_config_set(company=company, data={"org_memory": {"core_policies": ["P1", "P2"]}})
    company.refresh_from_db()
    backend = PostgresOrgMemoryBackend(company, acting_user=human.user)
    assert isinstance(backend, OrgMemoryBackend)
    assert backend.backend_name == "hybrid_prompt_retrieval"
    assert backend.is_connected is False
    with pytest.raises(ServiceUnavailableError):
        async_to_sync(backend.query)(OrgMemoryQuery(context="x"))
    async_to_sync(backend.connect)()
    assert backend.is_connected is True
    assert async_to_sync(backend.health_check)() is True

    write = async_to_sync(backend.write)
    fact_id = write(
        OrgFactWriteRequest(content="Deploy with the release train", category="procedure"),
        author=_author(senior),
    )
    assert OrgFact.objects.get(pk=fact_id).content == "Deploy with the release train"
    write(
        OrgFactWriteRequest(content="Never deploy on Fridays", category="core_policy"),
        author=OrgFactAuthor(is_human=True),
    )
    with pytest.raises(OrgMemoryAccessDeniedError):
        write(OrgFactWriteRequest(content="x", category="adr"), author=_author(junior))
    with pytest.raises(AccessDeniedError):
        write(OrgFactWriteRequest(content="x", category="adr"), author=_author(outsider))

    found = async_to_sync(backend.query)(OrgMemoryQuery(context="deploy train"))
    assert [(f.id, f.category, f.score) for f in found] == [(fact_id, "procedure", 1.0)]

    policies = async_to_sync(backend.list_policies)()
    assert [p.content for p in policies] == ["P1", "P2", "Never deploy on Fridays"]
    page = async_to_sync(backend.list_policies)(limit=2, offset=1)
    assert [p.content for p in page] == ["P2", "Never deploy on Fridays"]
    assert async_to_sync(backend.count_policies)() == 3

    async_to_sync(backend.disconnect)()
    assert backend.is_connected is False


def test_human_write_needs_an_acting_user(company):
    backend = PostgresOrgMemoryBackend(company)
    async_to_sync(backend.connect)()
    with pytest.raises(AccessDeniedError):
        async_to_sync(backend.write)(
            OrgFactWriteRequest(content="x", category="core_policy"),
            author=OrgFactAuthor(is_human=True),
        )
    assert OrgFact.objects.count() == 0
