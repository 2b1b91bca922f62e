"""Numbers arrive as JSON numbers and text as UTF-8, over REST, the tool endpoint and MCP
(issue 34: ``retry_count: true`` and ``ttl_seconds: "60"`` were accepted, and a conversation
id of invalid UTF-8 was stored as U+FFFD)."""

from __future__ import annotations

import httpx
import pytest

from memory.ingestion.models import Conversation
from memory.procedural.models import ExecutionReport
from orgmemory.models import ApprovalItem
from tests.synthorg.test_mcp_server import (  # noqa: F401
    committed,
    live_server_url,
    mcp,
    structured,
)

REPORT = "/api/v1/executions"
APPROVALS = "/api/v1/approvals"
TOOL = "/api/v1/memories/tools/call"
ASK = {"action_type": "deploy:production", "title": "Deploy", "risk_level": "high"}


def _problem(response, status, code, field):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code
    assert [e["field"] for e in body["errors"]] == [field], body
    return body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("retry_count", True, "int_type"),
        ("retry_count", "3", "int_type"),
        ("turn_count", False, "int_type"),
        ("duration_ms", "60", "int_type"),
        ("quality_score", True, "float_type"),
        ("quality_score", "7.5", "float_type"),
    ],
)
def test_an_execution_report_takes_numbers_only_as_numbers(caller, field, value, code):
    body = {"outcome": "failed", field: value}
    refused = caller.client.post(REPORT, body, format="json")
    problem = _problem(refused, 400, "validation_error", field)
    assert problem["errors"][0]["code"] == code
    tool = caller.client.post(TOOL, {"name": "report_execution", "arguments": body}, format="json")
    _problem(tool, 400, "invalid_tool_arguments", field)
    assert ExecutionReport.objects.count() == 0
    accepted = caller.client.post(REPORT, {"outcome": "failed", field: 3}, format="json")
    assert accepted.status_code == 202


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["60", True, "3600"])
def test_an_approval_ttl_is_a_number(caller, value):
    refused = caller.client.post(APPROVALS, {**ASK, "ttl_seconds": value}, format="json")
    assert _problem(refused, 400, "validation_error", "ttl_seconds")["errors"][0]["code"] == (
        "int_type"
    )
    task = caller.client.post(APPROVALS, {**ASK, "task_id": "1"}, format="json")
    _problem(task, 400, "validation_error", "task_id")
    tool = caller.client.post(
        TOOL,
        {"name": "request_approval", "arguments": {**ASK, "ttl_seconds": value}},
        format="json",
    )
    _problem(tool, 400, "invalid_tool_arguments", "ttl_seconds")
    assert ApprovalItem.objects.count() == 0
    assert caller.client.post(
        APPROVALS, {**ASK, "ttl_seconds": 3600}, format="json"
    ).status_code == (201)


@pytest.mark.django_db
def test_every_json_body_takes_numbers_only_as_numbers(caller):
    """The rule is in the base serializer, so every REST body has it (here: cost records);
    a form or query string, which is text, is exempt."""
    from persistence.models import CostRecord

    body = {"provider": "openai", "model": "gpt-4o", "cost": "0.01", "currency": "usd"}
    refused = caller.client.post(
        "/api/v1/costs", {**body, "input_tokens": "1000", "output_tokens": True}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["code"] == "validation_error"
    assert [(e["field"], e["code"], e["message"]) for e in refused.json()["errors"]] == [
        ("input_tokens", "int_type", "Expected a JSON integer, got a string."),
        ("output_tokens", "int_type", "Expected a JSON integer, got a boolean."),
    ]
    assert CostRecord.objects.count() == 0
    listed = caller.client.get("/api/v1/costs", {"limit": "5"})
    assert listed.status_code == 200


@pytest.mark.django_db
def test_invalid_utf8_in_a_path_query_or_body_is_refused(caller):
    refused = caller.client.post(  # a WSGI server passes the raw path on as RAW_URI
        "/api/v1/conversations/chat-%FF%FE/messages",
        {"messages": [{"role": "user", "content": "hi"}]},
        format="json",
        RAW_URI="/api/v1/conversations/chat-%FF%FE/messages",
    )
    _problem(refused, 400, "invalid_utf8", "path")
    query = caller.client.get("/api/v1/conversations?agent=%C3%28")
    _problem(query, 400, "invalid_utf8", "query")
    body = caller.client.generic(
        "POST",
        "/api/v1/conversations/chat-1/messages",
        b'{"messages": [{"role": "user", "content": "caf\xe9"}]}',
        content_type="application/json",
    )
    assert body.status_code == 400 and body.json()["code"] == "invalid_utf8"
    assert Conversation.objects.count() == 0


def test_an_invalid_utf8_conversation_id_over_http_is_refused_not_replaced(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
):
    """Through the real server: uvicorn decodes the path with U+FFFD for invalid bytes."""
    caller = committed.agent()
    headers = {"Authorization": f"Bearer {caller.raw_key}"}
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=live_server_url, headers=headers, timeout=30) as http:
        refused = http.post("/api/v1/conversations/chat-%FF/messages", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.headers["Content-Type"] == "application/problem+json"
        assert refused.json()["code"] == "invalid_utf8"
        assert refused.json()["errors"] == [
            {
                "field": "path",
                "message": (
                    "Text must be valid UTF-8: bytes that are not would be stored as U+FFFD, "
                    "not as sent."
                ),
                "code": "invalid_utf8",
            }
        ]
        accepted = http.post("/api/v1/conversations/chat-%C3%A9/messages", json=body)
        assert accepted.status_code == 202, accepted.text
    assert list(Conversation.objects.values_list("external_id", flat=True)) == ["chat-é"]


def test_mcp_tools_take_numbers_only_as_numbers(live_server_url, committed):  # noqa: F811
    caller = committed.agent()

    async def work(session):
        ttl = await session.call_tool("request_approval", {**ASK, "ttl_seconds": "60"})
        retries = await session.call_tool(
            "report_execution", {"outcome": "failed", "retry_count": True}
        )
        return ttl, retries

    _, (ttl, retries) = mcp(live_server_url, caller.raw_key, work)
    for result, field in ((ttl, "ttl_seconds"), (retries, "retry_count")):
        assert result.is_error
        problem = structured(result)
        assert problem["code"] == "invalid_tool_arguments"
        assert [(e["field"], e["code"]) for e in problem["errors"]] == [(field, "int_type")]
    assert ApprovalItem.objects.count() == 0 and ExecutionReport.objects.count() == 0
