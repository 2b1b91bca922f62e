"""The seeds' MemoryBackend / SharedKnowledgeStore protocols over Django + Postgres."""

import pytest

from memory.backends import (
    MemoryBackend,
    MemoryCapabilities,
    SharedKnowledgeStore,
    create_memory_backend,
)
from memory.domain import MemoryStoreRequest
from memory.errors import MemoryConnectionError, MemoryError, MemoryNotFoundError
from memory.models import Memory
from persistence.services.companies import company_config_set
from synthorg.enums import MemoryCategory
from synthorg.errors import NotFoundError, ServiceUnavailableError
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def backend(company):
    backend = create_memory_backend(company)
    backend.connect()
    yield backend
    backend.disconnect()


def request(content, category="semantic", **fields):
    return MemoryStoreRequest(content=content, category=category, **fields)


def test_implements_the_protocols(backend):
    assert isinstance(backend, MemoryBackend)
    assert isinstance(backend, SharedKnowledgeStore)
    assert isinstance(backend.capabilities, MemoryCapabilities)
    assert backend.backend_name == "pgvector"
    assert backend.is_connected and backend.health_check()
    caps = backend.capabilities
    assert caps.supported_categories == frozenset(MemoryCategory)
    assert (caps.supports_vector_search, caps.supports_shared_access, caps.supports_graph) == (
        True,
        True,
        False,
    )
    assert caps.max_memories_per_agent == 10_000


def test_crud(backend, company):
    agent = AgentFactory(company=company)
    memory_id = backend.store(
        str(agent.pk), request("Nightly backups run at 01:00.", tags=("ops",))
    )
    entry = backend.get(str(agent.pk), memory_id)
    assert (entry.id, entry.agent_id, entry.content, entry.metadata.tags) == (
        memory_id,
        str(agent.pk),
        "Nightly backups run at 01:00.",
        ("ops",),
    )
    assert backend.count(str(agent.pk)) == 1
    assert backend.count(str(agent.pk), category=MemoryCategory.SOCIAL) == 0
    assert backend.store(str(agent.pk), request("nightly backups run at 01:00")) == memory_id
    assert backend.delete(str(agent.pk), memory_id) is True
    assert backend.delete(str(agent.pk), memory_id) is False
    assert backend.get(str(agent.pk), memory_id) is None
    assert backend.get(str(agent.pk), "not-a-uuid") is None


def test_level_none_returns_empty_id(backend, company):
    agent = AgentFactory(company=company, memory_level="none")
    assert backend.store(str(agent.pk), request("Ephemeral.")) == ""
    assert not Memory.objects.exists()


def test_isolation_between_agents_and_companies(backend, company, outsider):
    mine = AgentFactory(company=company)
    other = AgentFactory(company=company)
    memory_id = backend.store(str(mine.pk), request("Private to mine."))
    assert backend.get(str(other.pk), memory_id) is None
    assert backend.delete(str(other.pk), memory_id) is False
    with pytest.raises(MemoryNotFoundError):
        backend.store(str(outsider.agent.pk), request("Cross-company write."))
    assert Memory.objects.count() == 1


def test_shared_publish_and_retract(backend, company):
    publisher, other = AgentFactory(company=company), AgentFactory(company=company)
    shared_id = backend.publish(str(publisher.pk), request("Use UTC everywhere.", "procedural"))
    assert Memory.objects.get(pk=shared_id).is_shared
    with pytest.raises(MemoryError) as denied:
        backend.retract(str(other.pk), shared_id)
    assert denied.value.status == 403
    assert backend.retract(str(publisher.pk), shared_id) is True
    assert backend.retract(str(publisher.pk), shared_id) is False


def test_not_connected(company):
    backend = create_memory_backend(company)
    agent = AgentFactory(company=company)
    with pytest.raises(MemoryConnectionError) as raised:
        backend.count(str(agent.pk))
    assert isinstance(raised.value, ServiceUnavailableError) and raised.value.status == 503


def test_errors_map_onto_http(backend):
    with pytest.raises(MemoryNotFoundError) as raised:
        backend.count("999999")
    assert isinstance(raised.value, NotFoundError) and raised.value.status == 404
    assert raised.value.code == "agent_not_found"


def test_unsupported_backend_config(company):
    company_config_set(company=company, data={"memory": {"backend": "mem0"}})
    with pytest.raises(MemoryError) as raised:
        create_memory_backend(company)
    assert raised.value.status == 422


def test_retrieve_and_search_shared(backend, company):
    from memory.retrieval.query import MemoryQuery

    agent, other = AgentFactory(company=company), AgentFactory(company=company)
    mine = backend.store(str(agent.pk), request("The billing service deploys on Fridays."))
    backend.store(str(other.pk), request("Other agent: billing deploys on Mondays."))
    shared = backend.publish(str(other.pk), request("Billing deploy freezes in December."))
    entries = backend.retrieve(str(agent.pk), MemoryQuery(text="billing deploy", limit=5))
    assert [e.id for e in entries] == [mine]
    assert entries[0].relevance_score is not None
    found = backend.search_shared(MemoryQuery(text="billing deploy"))
    assert [e.id for e in found] == [shared]
    assert (
        backend.search_shared(MemoryQuery(text="billing deploy"), exclude_agent=str(other.pk)) == ()
    )
