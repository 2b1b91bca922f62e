"""The request log: every agent search and context call recorded once, through
MemoryService (REST, tools, MCP); the preview's dry run records nothing; retention."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models import RequestLogEntry
from memory.core.retrieval.query import MemoryQuery
from memory.core.services.request_log import request_log_record
from memory.core.services.store import memory_store
from memory.core.tasks import trim_request_logs
from memory.interfaces.service import MemoryService
from memory.prompting.context import ContextRequest
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from synthorg.company_config.memory import RequestLogConfig
from synthorg.errors import DomainError
from synthorg.schedules import declared_schedules
from synthorg.tools import tool_call
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def _store(agent, content):
    memory_store(agent=agent, request=MemoryStoreRequest(content=content, category="semantic"))


def _rows(company):
    return list(
        RequestLogEntry.objects.filter(company=company)
        .order_by("created_at", "id")
        .values_list("agent_id", "kind", "via", "query", "result_count", "degraded")
    )


def test_rest_search_shared_search_and_context_are_each_logged_once(caller):
    _store(caller.agent, "Billing deploys every Friday at noon UTC.")
    _store(caller.agent, "The staging database password rotates monthly.")
    client = caller.client
    search = client.post("/api/v1/memories/search", {"query": "billing deploy"}, format="json")
    assert search.status_code == 200
    shared = client.post("/api/v1/shared/search", {"query": "billing"}, format="json")
    assert shared.status_code == 200, shared.content
    context = client.post(
        "/api/v1/memories/context", {"query": "billing deploy", "token_budget": 800}, format="json"
    )
    assert context.status_code == 200
    agent = caller.agent.pk
    assert _rows(caller.company) == [
        (agent, "search", "rest", "billing deploy", len(search.json()["results"]), []),
        (agent, "shared_search", "rest", "billing", len(shared.json()["results"]), []),
        (agent, "context", "rest", "billing deploy", len(context.json()["included"]), []),
    ]
    assert all(e.latency_ms >= 0 for e in RequestLogEntry.objects.all())


def test_tool_calls_are_logged_with_the_interface_they_came_through(caller):
    _store(caller.agent, "Billing deploys every Friday at noon UTC.")
    principal = Principal.for_agent(caller.agent)
    result = tool_call(
        principal=principal, name="search_memory", arguments={"query": "billing"}, via="mcp"
    )
    tool_call(
        principal=principal,
        name="get_memory_context",
        arguments={"query": "billing", "token_budget": 500},
        via="stdio",
    )
    rows = _rows(caller.company)
    assert rows[0] == (caller.agent.pk, "search", "mcp", "billing", len(result.data["results"]), [])
    assert rows[1][:4] == (caller.agent.pk, "context", "stdio", "billing")
    assert len(rows) == 2


def test_degraded_legs_are_logged(company, failing_embedder):
    agent = AgentFactory(company=company)
    _store(agent, "Billing deploys every Friday at noon UTC.")
    service = MemoryService(Principal.for_agent(agent))
    result = service.search(MemoryQuery(text="billing deploys"))
    assert result.degraded == ["dense"]
    [row] = _rows(company)
    assert row == (agent.pk, "search", "rest", "billing deploys", len(result.hits), ["dense"])


def test_dry_run_context_records_nothing_and_returns_the_same(caller):
    _store(caller.agent, "Billing deploys every Friday at noon UTC.")
    audit_before = AuditEntry.objects.count()
    service = MemoryService(Principal.for_agent(caller.agent))
    request = ContextRequest.build(query_text="billing", token_budget=800)
    preview = service.context(request, dry_run=True)
    assert RequestLogEntry.objects.count() == 0
    assert AuditEntry.objects.count() == audit_before
    real = service.context(request)
    assert preview.messages == real.messages
    assert [e.key for e in preview.included] == [e.key for e in real.included]
    assert RequestLogEntry.objects.count() == 1


def test_disabled_log_records_nothing(caller):
    company_config_set(company=caller.company, data={"memory": {"request_log": {"enabled": False}}})
    caller.agent.company.refresh_from_db()
    response = caller.client.post("/api/v1/memories/search", {"query": "billing"}, format="json")
    assert response.status_code == 200
    assert RequestLogEntry.objects.count() == 0


def test_config_rejects_a_zero_cap(company):
    with pytest.raises(DomainError):
        company_config_set(company=company, data={"memory": {"request_log": {"max_entries": 0}}})


def _entry(agent, query, created_at):
    return RequestLogEntry.objects.create(
        company=agent.company,
        agent=agent,
        kind="search",
        via="rest",
        query=query,
        result_count=1,
        latency_ms=1.0,
        created_at=created_at,
    )


def test_retention_keeps_the_newest_within_age_per_company():
    now = timezone.now()
    capped = CompanyFactory(
        config={"memory": {"request_log": {"max_entries": 2, "max_age_days": 7}}}
    )
    roomy = CompanyFactory()  # defaults: 10 000 entries, 30 days
    a, b = AgentFactory(company=capped), AgentFactory(company=roomy)
    _entry(a, "too old", now - timedelta(days=8))
    _entry(a, "third newest", now - timedelta(hours=3))
    _entry(a, "second newest", now - timedelta(hours=2))
    _entry(a, "newest", now - timedelta(hours=1))
    _entry(b, "ten days", now - timedelta(days=10))
    _entry(b, "forty days", now - timedelta(days=40))

    assert trim_request_logs() == {"expired": 2, "over_cap": 1}
    assert sorted(RequestLogEntry.objects.values_list("query", flat=True)) == [
        "newest",
        "second newest",
        "ten days",
    ]


def test_retention_is_a_declared_schedule():
    spec = declared_schedules()["memory-request-log-retention"]
    assert (spec.func, spec.schedule_type, spec.minutes) == (
        "memory.core.tasks.trim_request_logs",
        "I",
        15,
    )


@pytest.mark.django_db(transaction=True)
def test_own_transaction_insert_does_not_change_the_sessions_durability():
    agent = AgentFactory()
    assert not connection.in_atomic_block
    entry = request_log_record(
        agent=agent,
        config=RequestLogConfig(),
        kind="context",
        via="mcp",
        query="billing",
        result_count=2,
        latency_ms=3.5,
        degraded=["dense"],
    )
    row = RequestLogEntry.objects.values_list("kind", "via", "query", "result_count", "degraded")
    assert list(row.filter(pk=entry.pk)) == [("context", "mcp", "billing", 2, ["dense"])]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


@pytest.mark.django_db(transaction=True)
def test_own_transaction_insert_is_one_round_trip_for_several_rows():
    from django.test.utils import CaptureQueriesContext

    from memory.core.services.request_log import request_log_entry, request_log_write

    agent = AgentFactory()
    entries = [
        request_log_entry(
            agent=agent, config=RequestLogConfig(), kind=kind, via="rest", query=f"q{n}",
            result_count=n, latency_ms=1.0 + n, degraded=["dense"] if n else [],
        )
        for n, kind in enumerate(["search", "context"])
    ]  # fmt: skip
    with CaptureQueriesContext(connection) as queries:
        request_log_write(entries)
    assert len(queries.captured_queries) == 1
    rows = RequestLogEntry.objects.order_by("pk").values_list(
        "pk", "kind", "query", "result_count", "degraded"
    )
    assert list(rows) == [
        (entries[0].pk, "search", "q0", 0, []),
        (entries[1].pk, "context", "q1", 1, ["dense"]),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


def test_erasing_an_agent_deletes_its_logged_queries(caller, peer):
    """Issue 34: an erased agent's search text stayed in the request log, verbatim, for
    every member to read until it aged out."""
    from persistence.content_registry import content_kind
    from persistence.services.erasure import agent_erase
    from persistence.services.portability import content_export

    secret = "salary of jane doe in payroll"
    for who, query in ((caller, secret), (peer, "deploys")):
        found = who.client.post("/api/v1/memories/search", {"query": query}, format="json")
        assert found.status_code == 200
    assert content_kind("request_log_entry").label == "request log entries"
    rows = [json.loads(line) for line in content_export(company=caller.company, agent=caller.agent)]
    assert [r["query"] for r in rows if r["type"] == "request_log_entry"] == [secret]

    report = agent_erase(agent=caller.agent, reason="request #12")
    assert report.counts["request log entries"] == 1
    assert _rows(caller.company) == [(peer.agent.pk, "search", "rest", "deploys", 0, [])]
    assert not RequestLogEntry.objects.filter(query__contains="jane").exists()
