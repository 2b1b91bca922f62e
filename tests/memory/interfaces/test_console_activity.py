"""Console pages "what agents see and did": the context preview shows exactly what
``/memories/context`` answers (and records nothing); the request log with filters. Every
role of the company reads both; another company's staff sees none of it."""

import html
import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models import RequestLogEntry
from memory.core.services.store import memory_store
from persistence.models import AuditEntry
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db
ROLES = ["admin", "operator", "viewer"]
PREVIEW = "/console/memories/context-preview"
LOG = "/console/memories/requests"


def _client(company, role, **user):
    membership = MembershipFactory(company=company, role=role, user__password=None, **user)
    client = Client()
    client.force_login(membership.user)
    return client


def _store(agent, content):
    memory_store(agent=agent, request=MemoryStoreRequest(content=content, category="semantic"))


def _body(page) -> dict:
    match = re.search(r"<summary>Exact response body</summary><pre>(.*?)</pre>", page, re.S)
    return json.loads(html.unescape(match.group(1)))


@pytest.mark.parametrize("role", ROLES)
def test_preview_is_exactly_the_context_response_and_records_nothing(caller, role):
    _store(caller.agent, "Billing deploys every Friday at noon UTC. " * 3)
    _store(caller.agent, "Billing invoices are sent on the first of the month. " * 3)
    _store(caller.agent, "Billing rollbacks need the on-call engineer's approval. " * 3)
    budget = 120  # room for some, not all: something is dropped
    api = caller.client.post(
        "/api/v1/memories/context", {"query": "billing", "token_budget": budget}, format="json"
    ).json()
    assert api["included"] and api["dropped"]
    logged, audited = RequestLogEntry.objects.count(), AuditEntry.objects.count()

    client = _client(caller.company, role)
    response = client.get(
        PREVIEW,
        {"agent": caller.agent.pk, "query": "billing", "token_budget": budget, "include_org": "on"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert _body(page) == api
    included = page.split('aria-label="Included entries"')[1].split("</table>")[0]
    dropped = page.split('aria-label="Dropped entries"')[1].split("</table>")[0]
    assert included.count('class="context-entry"') == len(api["included"])
    assert dropped.count('class="context-entry"') == len(api["dropped"])
    assert f"<strong>{api['tokens_used']}</strong> of {budget} tokens" in page
    assert (RequestLogEntry.objects.count(), AuditEntry.objects.count()) == (logged, audited)


def test_preview_form_shows_agents_and_defaults(company):
    AgentFactory(company=company, name="billing-bot")
    AgentFactory(company=CompanyFactory(), name="their-bot")
    page = _client(company, "viewer").get(PREVIEW).content.decode()
    assert "billing-bot" in page and "their-bot" not in page
    assert 'name="token_budget" value="2000"' in page
    assert 'name="include_org" id="id_include_org" checked' in page


def test_preview_rejects_bad_input_on_the_page(caller):
    client = _client(caller.company, "operator")
    blank = client.get(PREVIEW, {"agent": caller.agent.pk, "query": " ", "token_budget": 100})
    assert blank.status_code == 400
    assert "This field is required." in blank.content.decode()
    negative = client.get(PREVIEW, {"agent": caller.agent.pk, "query": "x", "token_budget": -1})
    assert negative.status_code == 400
    assert "greater than or equal to 0" in negative.content.decode()
    assert RequestLogEntry.objects.count() == 0


def test_preview_of_another_companys_agent_is_404(caller):
    other = CompanyFactory()
    staff = _client(other, "admin", user__is_staff=True)
    response = staff.get(PREVIEW, {"agent": caller.agent.pk, "query": "x", "token_budget": 100})
    assert response.status_code == 404


def test_no_membership_is_403():
    client = Client()
    client.force_login(UserFactory())
    assert client.get(PREVIEW).status_code == 403
    assert client.get(LOG).status_code == 403


def _entry(agent, query, *, kind="search", degraded=(), minutes_ago=0, count=1):
    return RequestLogEntry.objects.create(
        company=agent.company,
        agent=agent,
        kind=kind,
        via="rest",
        query=query,
        result_count=count,
        latency_ms=12.345,
        degraded=list(degraded),
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def _rows(page):
    return re.findall(r'<td data-label="Query">(.*?)</td>', page)


@pytest.mark.parametrize("role", ROLES)
def test_request_log_lists_the_companys_calls_newest_first(company, role):
    bot, helper = AgentFactory(company=company, name="bot"), AgentFactory(company=company)
    _entry(bot, "billing deploy", minutes_ago=3, count=4)
    _entry(helper, "staging reset", kind="context", degraded=["dense"], minutes_ago=2)
    _entry(AgentFactory(company=CompanyFactory()), "their query", minutes_ago=1)
    response = _client(company, role).get(LOG)
    assert response.status_code == 200
    page = response.content.decode()
    assert _rows(page) == ["staging reset", "billing deploy"]
    assert '<td data-label="Latency">12.3 ms</td>' in page
    assert '<td data-label="Degraded">dense</td>' in page
    assert "the newest 10000 calls, none older than 30 days" in page


def test_request_log_filters(company):
    bot, helper = AgentFactory(company=company), AgentFactory(company=company)
    _entry(bot, "billing deploy", minutes_ago=3)
    _entry(bot, "billing context", kind="context", minutes_ago=2)
    _entry(helper, "staging reset", degraded=["dense"], minutes_ago=1)
    client = _client(company, "viewer")
    assert _rows(client.get(LOG, {"agent": bot.pk}).content.decode()) == [
        "billing context",
        "billing deploy",
    ]
    assert _rows(client.get(LOG, {"kind": "context"}).content.decode()) == ["billing context"]
    assert _rows(client.get(LOG, {"degraded": "on"}).content.decode()) == ["staging reset"]
    assert _rows(client.get(LOG, {"q": "DEPLOY"}).content.decode()) == ["billing deploy"]


def test_request_log_bad_filter_is_a_400_naming_it(company):
    response = _client(company, "viewer").get(LOG, {"kind": "delete"})
    assert response.status_code == 400
    assert "kind: Select a valid choice. delete is not one of the available choices." in (
        html.unescape(response.content.decode())
    )


def test_request_log_pages(company):
    bot = AgentFactory(company=company)
    for i in range(51):
        _entry(bot, f"q{i}", minutes_ago=100 - i)
    client = _client(company, "viewer")
    first = client.get(LOG).content.decode()
    assert _rows(first)[0] == "q50" and len(_rows(first)) == 50
    assert "page=2" in first
    assert _rows(client.get(LOG, {"page": 2}).content.decode()) == ["q0"]


def test_another_companys_staff_sees_none_of_the_log(company):
    _entry(AgentFactory(company=company), "billing deploy")
    staff = _client(CompanyFactory(), "admin", user__is_staff=True)
    page = staff.get(LOG).content.decode()
    assert _rows(page) == []
    assert "billing deploy" not in page
    assert staff.get(LOG, {"agent": AgentFactory(company=company).pk}).status_code == 400


def test_preview_shows_what_the_hierarchical_retriever_did(caller):
    from persistence.services.companies import company_config_set

    company_config_set(
        company=caller.company,
        data={"memory": {"retrieval": {"retriever": "hierarchical", "max_workers_per_query": 1}}},
    )
    _store(caller.agent, "Billing deploys every Friday at noon UTC.")
    client = _client(caller.company, "viewer")
    response = client.get(
        PREVIEW, {"agent": caller.agent.pk, "query": "billing deploy", "token_budget": 500}
    )
    assert response.status_code == 200
    body = _body(response.content.decode())
    assert body["retrieval"] == {
        "retriever": "hierarchical",
        "routing": "hints",
        "workers": ["semantic"],
        "judgement": "",
        "queries": ["billing deploy"],
        "retries": 0,
    }
    assert len(body["included"]) == 1
