"""One agent request reads its company's config once (issue 34, item 5).

``MemoryService`` parses the config once per request and hands the parsed object down: the
strategy, the org context (core policies, extended facts, their embedder and query-vector
transform), the memory search (shared knowledge, the embedder, the query adapter) and the
request log read nothing again. Counted at the lookup every ``company_config`` call goes
through (a counting wrapper that calls the real one)."""

import pytest

import persistence.selectors.config as config_selectors
from memory.core.models import RequestLogEntry
from orgmemory.services.facts import fact_publish
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

CONTEXT = "/api/v1/memories/context"
SEARCH = "/api/v1/memories/search"
SHARED_SEARCH = "/api/v1/shared/search"
CALL = "/api/v1/memories/tools/call"


@pytest.fixture
def config_reads(monkeypatch):
    """The id of the company each config read was for, one entry per read."""
    reads: list[int] = []
    real = config_selectors._parsed

    def counting(company_id, revision, raw):
        reads.append(company_id)
        return real(company_id, revision, raw)

    monkeypatch.setattr(config_selectors, "_parsed", counting)
    return reads


def org_company(caller, strategy: str = "context"):
    """A company with everything a context request reads: config and fact core policies,
    an extended fact (embedded: the org dense leg and its query-vector transform run), fine-
    tuning on (the memory search plans its query adapter), shared knowledge and memories."""
    company = caller.company
    company_config_set(company=company, data=_config(strategy=strategy))
    membership = MembershipFactory(company=company, role="admin")
    human = Principal.for_human(membership.user, company, membership.role)
    fact_publish(company=company, actor=human, content="Deploys need two approvers.",
                 category="core_policy")  # fmt: skip
    fact_publish(company=company, actor=human, category="adr",
                 content="ADR-7: the billing service deploys through blue/green.")  # fmt: skip
    for content in ("The billing service deploys every Friday.", "Billing runs on Postgres."):
        response = caller.client.post(
            "/api/v1/memories", {"content": content, "category": "semantic"}, format="json"
        )
        assert response.status_code == 201, response.content
    response = caller.client.post(
        "/api/v1/shared", {"content": "Billing deploys are announced in #ops.",
                           "category": "semantic"}, format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    return company


def _config(**retrieval) -> dict:
    fine_tune = {"enabled": True, "checkpoint_path": "adapters", "base_model": "m"}
    return {
        "org_memory": {"core_policies": ["Never log customer data."]},
        "memory": {"fine_tune": fine_tune, "retrieval": retrieval},
    }


@pytest.mark.parametrize("strategy", ["context", "tool_based", "self_editing"])
def test_a_context_request_reads_the_config_once(caller, config_reads, strategy):
    company = org_company(caller, strategy)
    config_reads.clear()
    response = caller.client.post(
        CONTEXT, {"query": "how does billing deploy", "token_budget": 2000}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["messages"][0]["content"].startswith("## Company policies")
    if strategy == "context":  # the whole path ran: memories, shared knowledge, org facts
        kinds = sorted({entry["kind"] for entry in body["included"]})
        assert kinds == ["memory", "org_fact"]
    assert config_reads == [company.pk]
    assert RequestLogEntry.objects.filter(company=company, kind="context").count() == 1


def test_a_search_request_reads_the_config_once(caller, config_reads):
    company = org_company(caller)
    config_reads.clear()
    response = caller.client.post(SEARCH, {"query": "billing deploy"}, format="json")
    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) == 3  # two private memories and the shared one
    assert config_reads == [company.pk]
    assert RequestLogEntry.objects.filter(company=company, kind="search").count() == 1


def test_a_shared_search_reads_the_config_once(caller, config_reads):
    company = org_company(caller)
    config_reads.clear()
    response = caller.client.post(SHARED_SEARCH, {"query": "billing deploy"}, format="json")
    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) == 1
    assert config_reads == [company.pk]


def test_the_archival_search_tool_reads_the_config_once(caller, config_reads):
    company = org_company(caller, "self_editing")
    config_reads.clear()
    response = caller.client.post(
        CALL,
        {"name": "archival_memory_search", "arguments": {"query": "billing deploy"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert len(response.json()["data"]["results"]) == 3
    assert config_reads == [company.pk]


def test_the_search_memory_tool_reads_the_config_once(caller, config_reads):
    company = org_company(caller)
    config_reads.clear()
    response = caller.client.post(
        CALL, {"name": "search_memory", "arguments": {"query": "billing deploy"}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert len(response.json()["data"]["results"]) == 3
    assert config_reads == [company.pk]
