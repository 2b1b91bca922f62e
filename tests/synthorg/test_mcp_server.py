"""The MCP server, driven by the official SDK client (ClientSession over streamable HTTP)
against a live ASGI server (the product's router: MCP at /mcp/, Django for the rest)."""

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import quote

import httpx
import httpx2
import pytest
import uvicorn
from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store
from persistence.models import AuditEntry
from persistence.selectors.identity import agent_for_api_key
from synthorg.asgi import Router
from synthorg.mcp.http import NOT_AUTHENTICATED
from synthorg.tools import registered_tools
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory

# The live server's threads have connections of their own: what they must see is committed
# (a transactional test; its flush runs as the owner, append-only tables included).
pytestmark = pytest.mark.django_db(transaction=True)
BASE_DIR = settings.BASE_DIR


class Committed:
    """Agents and memories the live server can see (the test is transactional)."""

    def agent(self, config=None):
        caller = make_agent_caller(company=CompanyFactory(config=config or {}))
        agent_for_api_key(caller.raw_key)  # records the key's last use now
        return caller

    def store(self, caller, content, category="semantic"):
        request = MemoryStoreRequest(content=content, category=category)
        return str(memory_store(agent=caller.agent, request=request).id)


@pytest.fixture
def committed(transactional_db):
    return Committed()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def live_server_url(transactional_db):
    port = free_port()
    app = Router(WSGIMiddleware(get_wsgi_application(), workers=4))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the ASGI server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    # The server's worker threads keep their persistent connections (CONN_MAX_AGE); end
    # them (same role), or the flush and the test database's drop would wait for them.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
            "datname = current_database() AND pid <> pg_backend_pid() AND usename = current_user"
        )


def mcp(url, key, work):
    """Run ``work(session)`` in an initialized SDK client session authenticated by ``key``."""

    async def main():
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            return initialized, await work(session)

    return asyncio.run(main())


def structured(result):
    assert result.structured_content is not None
    return result.structured_content


def test_initialize_list_store_search_and_guardrails(live_server_url, committed):
    caller = committed.agent()

    async def work(session):
        tools = await session.list_tools()
        stored = await session.call_tool(
            "store_memory",
            {"content": "The billing service deploys every Friday at noon UTC.", "tags": ["ops"]},
        )
        found = await session.call_tool("search_memory", {"query": "when does billing deploy?"})
        memory_id = structured(stored)["id"]
        refused = await session.call_tool("forget_memory", {"id": memory_id})
        no_reason = await session.call_tool(
            "forget_memory", {"id": memory_id, "confirm": True, "reason": " "}
        )
        return tools, stored, found, refused, no_reason

    initialized, (tools, stored, found, refused, no_reason) = mcp(
        live_server_url, caller.raw_key, work
    )
    assert initialized.server_info.name == "synthorg-memory"
    listed = {tool.name: tool for tool in tools.tools}
    assert set(listed) == {spec.name for spec in registered_tools()}
    assert listed["search_memory"].input_schema["required"] == ["query"]
    assert listed["forget_memory"].annotations.destructive_hint is True
    assert listed["search_memory"].annotations.destructive_hint is False

    assert not stored.is_error
    memory_id = structured(stored)["id"]
    assert structured(stored) == {
        "id": memory_id,
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
    }
    assert stored.content[0].text == f"Memory stored with id {memory_id}."
    memory = Memory.objects.get(pk=memory_id)
    assert (memory.agent_id, memory.tags) == (caller.agent.pk, ["ops"])

    hits = structured(found)["results"]
    assert hits[0]["memory"]["id"] == memory_id
    assert hits[0]["memory"]["content"] == "The billing service deploys every Friday at noon UTC."

    assert refused.is_error and structured(refused)["code"] == "confirmation_required"
    assert json.loads(refused.content[0].text)["status"] == 400
    assert no_reason.is_error and structured(no_reason)["code"] == "reason_required"
    assert Memory.objects.filter(pk=memory_id).exists()


def test_forget_with_guardrails_is_audited_as_mcp(live_server_url, committed):
    caller = committed.agent()
    stored = {"id": committed.store(caller, "Temporary note.", "working")}

    async def work(session):
        return await session.call_tool(
            "forget_memory", {"id": stored["id"], "confirm": True, "reason": "no longer true"}
        )

    _, result = mcp(live_server_url, caller.raw_key, work)
    assert not result.is_error and structured(result) == {"id": stored["id"], "deleted": True}
    assert not Memory.objects.filter(pk=stored["id"]).exists()
    entry = AuditEntry.objects.get(action_type="memory.deleted")
    assert (entry.actor_agent_id, entry.details["reason"], entry.details["via"]) == (
        caller.agent.pk,
        "no longer true",
        "mcp",
    )


def test_wrong_key_is_refused(live_server_url, committed):
    caller = committed.agent()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer sok_nope_nope"}, {"Authorization": "Basic x"}):
        response = httpx.post(
            f"{live_server_url}/mcp/", json=body, headers={"Accept": "application/json", **headers}
        )
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Bearer realm="synthorg"'
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["status"] == 401
    # An MCP client (it accepts an event stream) gets the problem as a JSON-RPC error.
    response = httpx.post(
        f"{live_server_url}/mcp/",
        json=body,
        headers={"Accept": "application/json, text/event-stream", "Authorization": "Basic x"},
    )
    assert (response.status_code, response.headers["content-type"]) == (401, "application/json")
    problem = {
        "type": "https://synthorg.dev/problems/malformed_credentials",
        "title": "Not authenticated",
        "status": 401,
        "detail": NOT_AUTHENTICATED,
        "code": "malformed_credentials",
        "errors": [],
    }
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32001,
            "message": f"Not authenticated (malformed_credentials): {NOT_AUTHENTICATED}",
            "data": problem,
        },
        **problem,
    }

    async def work(session):
        return await session.list_tools()

    # The official client shows the server's code and detail, not "Server returned an error
    # response" (issue 32).
    with pytest.raises(BaseExceptionGroup) as refused:
        mcp(live_server_url, caller.raw_key + "x", work)
    [error] = _leaves(refused.value)
    assert isinstance(error, MCPError)
    assert str(error) == "Not authenticated (invalid_credentials): The API key is not valid."
    assert error.data["code"] == "invalid_credentials"


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [
        leaf
        for exc in group.exceptions
        for leaf in (_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    ]


def test_another_companys_memory_is_not_found(live_server_url, committed):
    caller = committed.agent()
    outsider = committed.agent()
    theirs = committed.store(outsider, "Outsider secret.")

    async def work(session):
        read = await session.call_tool("recall_memory", {"id": theirs})
        forget = await session.call_tool(
            "forget_memory", {"id": theirs, "confirm": True, "reason": "try"}
        )
        search = await session.call_tool("search_memory", {"query": "outsider secret"})
        return read, forget, search

    _, (read, forget, search) = mcp(live_server_url, caller.raw_key, work)
    assert read.is_error and structured(read)["code"] == "memory_not_found"
    assert structured(read)["status"] == 404
    assert forget.is_error and structured(forget)["code"] == "memory_not_found"
    assert structured(search)["results"] == []
    assert Memory.objects.filter(pk=theirs).exists()


NO_RECENCY = {"memory": {"retrieval": {"relevance_weight": 1.0, "recency_weight": 0.0}}}


def timeless(data):
    """Drop the recency score (the two calls run a few ms apart; it does not weigh here)."""
    if isinstance(data, dict):
        return {k: timeless(v) for k, v in data.items() if k != "recency"}
    if isinstance(data, list):
        return [timeless(item) for item in data]
    return data


def test_rest_and_mcp_answer_the_same(live_server_url, committed):
    caller = committed.agent(NO_RECENCY)
    memory_id = committed.store(caller, "Ana leads the billing team.", "social")
    calls = [
        ("recall_memory", {"id": memory_id}),
        ("search_memory", {"query": "who leads billing?", "limit": 3}),
        ("get_memory_context", {"query": "billing team", "include_org": False}),
        ("recall_memory", {"id": "3f1c2a9e-8a51-4c8e-9a77-2b0f6f0d4f10"}),
        ("search_memory", {"query": "x", "limit": 0}),
    ]

    async def work(session):
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    _, results = mcp(live_server_url, caller.raw_key, work)
    for (name, arguments), result in zip(calls, results, strict=True):
        rest = caller.client.post(
            "/api/v1/memories/tools/call", {"name": name, "arguments": arguments}, format="json"
        )
        if result.is_error:
            problem = rest.json()
            assert structured(result)["code"] == problem["code"]
            assert structured(result)["status"] == rest.status_code
            assert structured(result)["detail"] == problem["detail"]
        else:
            assert rest.status_code == 200
            assert rest.json()["content"] == result.content[0].text
            assert timeless(rest.json()["data"]) == timeless(structured(result)), name
    # ... and the tool's data is the REST resource itself.
    assert structured(results[0]) == caller.client.get(f"/api/v1/memories/{memory_id}").json()


def test_rest_paths_still_served_by_django(live_server_url, committed):
    caller = committed.agent()
    response = httpx.get(
        f"{live_server_url}/api/v1/memories/count",
        headers={"Authorization": f"Bearer {caller.raw_key}"},
    )
    assert response.status_code == 200 and response.json() == {"count": 0, "category": None}
    missing = httpx.get(f"{live_server_url}/mcp/elsewhere")
    assert missing.status_code == 404


def test_stdio_server_runs_as_the_keys_agent(committed):
    caller = committed.agent()
    memory_id = committed.store(caller, "The stdio transport shares the same services.")
    db = connection.settings_dict
    host = db["HOST"] or "127.0.0.1"
    netloc = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@"
    if host.startswith("/"):
        url = f"postgresql://{netloc}:{db['PORT']}/{db['NAME']}?host={quote(host)}"
    else:
        url = f"postgresql://{netloc}{host}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "SYNTHORG_AGENT_API_KEY": caller.raw_key}
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio"], env=env, cwd=str(BASE_DIR)
    )

    async def main():
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            recalled = await session.call_tool("recall_memory", {"id": memory_id})
            refused = await session.call_tool("forget_memory", {"id": memory_id})
            return tools, recalled, refused

    tools, recalled, refused = asyncio.run(main())
    assert {tool.name for tool in tools.tools} == {spec.name for spec in registered_tools()}
    assert structured(recalled)["content"] == "The stdio transport shares the same services."
    assert structured(recalled)["agent_id"] == caller.agent.pk
    assert refused.is_error and structured(refused)["code"] == "confirmation_required"


def test_stdio_refuses_a_bad_key():
    env = {**os.environ, "SYNTHORG_AGENT_API_KEY": "sok_nope_nope"}
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio"],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "SYNTHORG_AGENT_API_KEY: " in done.stderr


def test_store_without_the_non_inferable_tag_answers_with_the_advisory_warning(
    live_server_url, committed
):
    from memory.core.retrieval.filtering import TAG_MISSING

    caller = committed.agent({"memory": {"retrieval": {"non_inferable_only": True}}})

    async def work(session):
        untagged = await session.call_tool("store_memory", {"content": "We chose Postgres."})
        tagged = await session.call_tool(
            "store_memory", {"content": "Why not Kafka: no ops team.", "tags": ["non-inferable"]}
        )
        return untagged, tagged

    _, (untagged, tagged) = mcp(live_server_url, caller.raw_key, work)
    memory_id = structured(untagged)["id"]
    assert structured(untagged) == {
        "id": memory_id,
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
        "warnings": [{"code": "non_inferable_tag_missing", "message": TAG_MISSING}],
    }
    assert untagged.content[0].text == f"Memory stored with id {memory_id}. {TAG_MISSING}"
    assert "warnings" not in structured(tagged)
    assert Memory.objects.filter(agent=caller.agent).count() == 2


def test_request_dream_over_mcp_is_queued_then_rate_limited(live_server_url, committed, settings):
    from memory.ingestion.models import DreamRequest
    from memory.interfaces.tools.catalogue import DREAM_QUEUED

    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    caller = committed.agent()

    async def work(session):
        first = await session.call_tool("request_dream", {})
        second = await session.call_tool("request_dream", {})
        return first, second

    _, (first, second) = mcp(live_server_url, caller.raw_key, work)
    request = DreamRequest.objects.get(agent=caller.agent)
    assert not first.is_error
    assert first.content[0].text == DREAM_QUEUED["extractive"].format(id=request.pk)
    assert structured(first)["id"] == str(request.pk)
    assert (structured(first)["method"], structured(first)["via"]) == ("extractive", "mcp")
    assert second.is_error
    problem = structured(second)
    assert (problem["status"], problem["code"]) == (429, "dream_rate_limited")
    assert 1 <= problem["retry_after"] <= 3600
    assert DreamRequest.objects.filter(agent=caller.agent).count() == 1


def test_store_and_search_with_a_tuple_namespace_over_mcp(live_server_url, committed):
    caller = committed.agent()
    mine = ["org", caller.agent.company.slug, caller.agent.name]

    async def work(session):
        stored = await session.call_tool(
            "store_memory", {"content": "Billing deploys on Fridays.", "namespace": mine}
        )
        found = await session.call_tool(
            "search_memory", {"query": "billing deploys", "namespaces": [mine]}
        )
        refused = await session.call_tool(
            "store_memory", {"content": "x", "namespace": ["org", "globex", caller.agent.name]}
        )
        return stored, found, refused

    _, (stored, found, refused) = mcp(live_server_url, caller.raw_key, work)
    memory = Memory.objects.get(pk=structured(stored)["id"])
    assert memory.namespace == "/".join(mine)
    assert [hit["memory"]["id"] for hit in structured(found)["results"]] == [str(memory.pk)]
    assert refused.is_error
    assert (structured(refused)["status"], structured(refused)["code"]) == (
        400,
        "namespace_bound_mismatch",
    )
    assert Memory.objects.filter(agent=caller.agent).count() == 1
