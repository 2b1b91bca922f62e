"""One input-safety layer for REST and MCP: a NUL or a lone surrogate in any string argument
of any registered tool is a precise 400 (problem+json / MCP tool error), never a JSON-RPC
internal error carrying PostgreSQL's message (issue 22, finding 7)."""

from __future__ import annotations

import pytest

from synthorg.errors import InvalidInputError
from synthorg.tools import registered_tools, tool_call
from tests.synthorg.test_mcp_server import committed, live_server_url, mcp, structured  # noqa: F401

NUL_TEXT = "before\x00after"
SURROGATE_TEXT = "before\ud800after"
MESSAGE = "Text may not contain NUL characters or unpaired UTF-16 surrogates."


def _is_text(prop: dict) -> bool:
    kinds = [prop.get("type")] + [p.get("type") for p in prop.get("anyOf", [])]
    return "string" in kinds


def _text_arguments() -> list[tuple[str, str]]:
    """Every (tool, argument) whose argument takes text, the guardrail ``reason`` included."""
    pairs = []
    for spec in registered_tools():
        for name, prop in spec.input_schema()["properties"].items():
            if _is_text(prop):
                pairs.append((spec.name, name))
    return pairs


TEXT_ARGUMENTS = _text_arguments()


def test_every_tool_with_text_arguments_is_covered(db):
    assert len({tool for tool, _ in TEXT_ARGUMENTS}) >= 16
    assert ("store_memory", "content") in TEXT_ARGUMENTS


@pytest.mark.django_db
@pytest.mark.parametrize(("tool", "argument"), TEXT_ARGUMENTS)
@pytest.mark.parametrize("text", [NUL_TEXT, SURROGATE_TEXT], ids=["nul", "surrogate"])
def test_the_dispatcher_refuses_unsafe_text_before_any_handler(caller, tool, argument, text):
    from persistence.principal import Principal

    principal = Principal(company=caller.company, agent=caller.agent, api_key=None)
    with pytest.raises(InvalidInputError) as caught:
        tool_call(principal=principal, name=tool, arguments={argument: text}, via="mcp")
    assert caught.value.code == "invalid_characters"
    assert caught.value.errors == [
        {"field": argument, "message": MESSAGE, "code": "invalid_characters"}
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(("tool", "argument"), TEXT_ARGUMENTS)
def test_the_rest_tool_call_answers_a_precise_400(caller, tool, argument):
    response = caller.client.post(
        "/api/v1/memories/tools/call",
        {"name": tool, "arguments": {argument: NUL_TEXT}},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_characters"
    assert body["errors"][0]["field"] == f"arguments.{argument}"


def test_every_tool_over_mcp_answers_a_tool_error_without_database_text(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
):
    caller = committed.agent()

    async def work(session):
        results = {}
        for tool, argument in TEXT_ARGUMENTS:
            results[(tool, argument)] = await session.call_tool(tool, {argument: NUL_TEXT})
        return results

    _, results = mcp(live_server_url, caller.raw_key, work)
    assert set(results) == set(TEXT_ARGUMENTS)
    for (_tool, argument), result in results.items():
        assert result.is_error, (_tool, argument)
        problem = structured(result)
        assert problem == {
            "status": 400,
            "code": "invalid_characters",
            "title": problem["title"],
            "detail": f"{argument}: {MESSAGE}",
            "errors": [{"field": argument, "message": MESSAGE, "code": "invalid_characters"}],
        }
        text = result.content[0].text
        assert "psycopg" not in text and "PostgreSQL" not in text and "0x00" not in text
