"""POST /memories/context: prompt-ready messages within a token budget."""

import pytest

from memory.core.models.memory import Memory
from memory.prompting.strategies import CONTEXT_WRITE_INSTRUCTION

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories/context"


GUIDANCE = {"role": "system", "content": CONTEXT_WRITE_INSTRUCTION}


def test_the_default_context_strategy_tells_the_agent_what_is_non_inferable(company):
    """Issue 33: under the default ``context`` strategy an agent that may write is told what
    qualifies as non-inferable (seeds D23), as under the other strategies; an agent whose
    level is ``none`` stores nothing and is told nothing."""
    from memory.core.retrieval.filtering import NON_INFERABLE_GUIDANCE
    from tests.conftest import make_agent_caller

    writer = make_agent_caller(company=company, memory_level="persistent")
    body = context(writer, query="billing deploy", token_budget=100)
    assert body["messages"] == [GUIDANCE]
    assert NON_INFERABLE_GUIDANCE in body["messages"][0]["content"]
    silent = make_agent_caller(company=company, memory_level="none")
    assert context(silent, query="billing deploy", token_budget=100)["messages"] == []


def store(caller, content, category="semantic"):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": category}, format="json"
    )
    assert response.status_code == 201, response.json()
    return Memory.objects.get(pk=response.json()["id"])


def context(caller, **body):
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_context_messages_within_budget(caller, peer):
    deploy = store(caller, "The billing service deploys every Friday at noon UTC.")
    store(peer, "Peer private: billing deploys are frozen in December.")
    body = context(caller, query="prepare the billing service deploy", token_budget=500)
    assert [e["id"] for e in body["included"]] == [str(deploy.pk)]
    assert body["dropped"] == [] and body["degraded"] == []
    assert body["token_budget"] == 500
    assert 0 < body["tokens_used"] <= 500
    assert body["tokens_used"] == body["included"][0]["tokens"]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "system", "system"]
    guidance, directive, memories = (m["content"] for m in body["messages"])
    assert guidance == CONTEXT_WRITE_INSTRUCTION
    assert "not instructions" in directive
    label = f"semantic, {deploy.created_at:%Y-%m-%d}"
    assert f'<memory-entry meta="{label}">\n{deploy.content}\n</memory-entry>' in memories
    assert "Peer private" not in memories


def test_context_drops_what_does_not_fit(caller):
    store(caller, "The billing service deploys every Friday at noon UTC.")
    body = context(caller, query="billing deploy", token_budget=5)
    # the storing guidance only (an instruction, outside the memories' budget)
    assert body["messages"] == [GUIDANCE]
    assert body["included"] == [] and body["tokens_used"] == 0
    assert len(body["dropped"]) == 1 and body["dropped"][0]["kind"] == "memory"


def test_context_with_nothing_relevant(caller):
    body = context(caller, query="billing deploy", token_budget=100)
    assert body == {
        "messages": [GUIDANCE],
        "included": [],
        "dropped": [],
        "tokens_used": 0,
        "token_budget": 100,
        "degraded": [],
    }


def test_context_filters_by_category(caller):
    store(caller, "The billing service deploys every Friday.", category="semantic")
    procedure = store(caller, "To deploy billing, run make release.", category="procedural")
    body = context(caller, query="billing deploy", token_budget=500, categories=["procedural"])
    assert [e["id"] for e in body["included"]] == [str(procedure.pk)]


def test_context_degraded_when_the_embedder_fails(caller, failing_embedder):
    memory = store(caller, "The billing service deploys every Friday at noon UTC.")
    body = context(caller, query="billing deploys", token_budget=500)
    assert body["degraded"] == ["dense"]
    assert [e["id"] for e in body["included"]] == [str(memory.pk)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"token_budget": 100}, "query"),
        ({"query": "   ", "token_budget": 100}, "query"),
        ({"query": "x"}, "token_budget"),
        ({"query": "x", "token_budget": -1}, "token_budget"),
        ({"query": "x", "token_budget": "lots"}, "token_budget"),
        ({"query": "x", "token_budget": 10, "categories": ["gossip"]}, "categories.0"),
        ({"query": "x", "token_budget": 10, "namespaces": [" "]}, "namespaces.0"),
        ({"query": "x", "token_budget": 10, "pinned": ["p"]}, "pinned"),
    ],
)
def test_context_rejects_invalid_input(caller, body, field):
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    problem = response.json()
    assert problem["code"] == "validation_error"
    assert field in [e["field"] for e in problem["errors"]], problem


def test_context_is_for_agents(human_client):
    response = human_client.post(URL, {"query": "x", "token_budget": 10}, format="json")
    assert response.status_code == 403


def test_a_blank_query_is_refused_by_the_serializer(caller):
    """The one check a blank query meets over REST (the view kept none of its own); tools and
    MCP build the request with ``ContextRequest.build``, which refuses it (``query_text_blank``)."""
    response = caller.client.post(URL, {"query": "  \n ", "token_budget": 100}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "query", "message": "This field may not be blank.", "code": "blank"}
    ]
