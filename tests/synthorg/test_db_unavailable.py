"""A database that cannot be reached: 503 + Retry-After (problem for the API and MCP, a page
for the console), never a 500; the service answers normally once it is back.

The outages are real: the connection is closed and its settings point at a directory with
no server socket, so psycopg fails to connect exactly as it does while the postmaster
restarts; or the connection's server process is ended from a second connection
(``pg_terminate_backend``, what an operator or a restarting server does)."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from memory.core.models import RequestLogEntry
from memory.core.models.memory import Memory
from memory.core.services.request_log import request_log_write
from synthorg.after_response import after_response
from synthorg.mcp.auth import principal_for_key
from synthorg.mcp.server import _run_tool
from tests.synthorg.crashing_urls import terminate_backend_of
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@contextmanager
def database_unreachable(nowhere):
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict["HOST"] = str(nowhere)
    connection.settings_dict["PORT"] = "5432"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def assert_unavailable_problem(response):
    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "5"
    body = response.json()
    assert (body["status"], body["code"], body["retry_after"]) == (503, "database_unavailable", 5)
    assert body["detail"].startswith("The database is unavailable")
    assert len(body["correlation_id"]) == 32


def test_api_answers_503_problem_while_the_database_is_unreachable(caller, tmp_path):
    with database_unreachable(tmp_path):
        read = caller.client.get("/api/v1/memories")
        write = caller.client.post(
            "/api/v1/memories",
            {"content": "Lunch is at noon.", "category": "social"},
            format="json",
        )
    for response in (read, write):
        assert_unavailable_problem(response)
    assert not Memory.objects.exists()  # nothing half-written

    # back: the next request opens a fresh connection
    stored = caller.client.post(
        "/api/v1/memories", {"content": "Lunch is at noon.", "category": "social"}, format="json"
    )
    assert stored.status_code == 201, stored.json()
    assert Memory.objects.filter(agent=caller.agent).count() == 1


def test_console_pages_answer_503_while_the_database_is_unreachable(human_client, tmp_path):
    assert human_client.get("/console/inbox/").status_code == 200
    with database_unreachable(tmp_path):
        response = human_client.get("/console/inbox/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"The database is unavailable" in response.content


def test_api_answers_503_when_the_connections_server_process_is_ended(caller):
    terminate_backend_of(connection)  # "terminating connection due to administrator command"

    response = caller.client.post(
        "/api/v1/memories", {"content": "Lunch is at noon.", "category": "social"}, format="json"
    )

    assert_unavailable_problem(response)
    # the dead connection was closed: the next request opens a fresh one
    stored = caller.client.post(
        "/api/v1/memories", {"content": "Lunch is at noon.", "category": "social"}, format="json"
    )
    assert stored.status_code == 201, stored.json()
    assert Memory.objects.filter(agent=caller.agent).count() == 1


def test_a_middleware_that_meets_the_dead_database_after_the_view_answers_503(settings, db):
    """The view answered; the session is saved on the way out and the database is gone:
    Django's handler500 (synthorg.db.unavailable.server_error) answers 503, not 500."""
    settings.ROOT_URLCONF = "tests.synthorg.crashing_urls"
    client = Client(raise_request_exception=False)  # what a browser gets, not the exception

    response = client.get("/session-then-database-gone")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"The database is unavailable" in response.content
    assert client.get("/healthz").status_code == 200


def mcp_initialize(base_url: str, key: str) -> httpx.Response:
    return httpx.post(
        f"{base_url}/mcp/",
        json=MCP_INITIALIZE,
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
        timeout=30,
    )


def test_mcp_answers_503_problem_while_the_database_is_unreachable(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
    tmp_path,
):
    caller = committed.agent()
    with connection.cursor() as cursor:  # the live server's connections die with the server
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    with database_unreachable(tmp_path):
        response = mcp_initialize(live_server_url, caller.raw_key)
    assert response.status_code == 503, response.text
    # an MCP client (it accepts an event stream) reads the problem as a JSON-RPC error
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == "5"
    body = response.json()
    assert (body["status"], body["code"], body["retry_after"]) == (503, "database_unavailable", 5)
    assert body["error"]["code"] == -32002
    assert body["error"]["data"]["code"] == "database_unavailable"
    assert body["error"]["message"].startswith(f"{body['title']} (database_unavailable): ")
    # back: the next request authenticates and is served
    again = mcp_initialize(live_server_url, caller.raw_key)
    assert again.status_code == 200, again.text


def test_an_mcp_tool_answers_a_503_tool_error_while_the_database_is_unreachable(caller, tmp_path):
    principal = principal_for_key(caller.raw_key)
    with database_unreachable(tmp_path):
        result, error = _run_tool(
            None, lambda _ctx: principal, "search_memory", {"query": "lunch"}, "mcp"
        )
    assert result is None
    assert (error["status"], error["code"], error["retry_after"]) == (
        503,
        "database_unavailable",
        5,
    )
    assert len(error["correlation_id"]) == 32
    result, error = _run_tool(
        None, lambda _ctx: principal, "search_memory", {"query": "lunch"}, "mcp"
    )
    assert error is None, error


def test_bookkeeping_the_database_cannot_take_is_skipped_with_a_warning(caller, tmp_path, caplog):
    """Outside a request (the MCP path) the request log is written at once: while the
    database is unavailable the row is dropped with a warning, never raised into the call."""
    entry = RequestLogEntry(
        company_id=caller.company.pk,
        agent=caller.agent,
        kind="search",
        via="mcp",
        query="lunch",
        result_count=0,
        latency_ms=1.0,
        degraded=[],
        created_at=timezone.now(),
    )
    with (
        caplog.at_level(logging.WARNING, logger="synthorg.after_response"),
        database_unreachable(tmp_path),
    ):
        after_response(request_log_write, entry)
    assert "skipped 1 item(s): the database is unavailable" in caplog.text
    assert not RequestLogEntry.objects.exists()
