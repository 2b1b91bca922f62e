"""Non-inferable guidance (seeds 000/001, D23): what agents are told, the advisory warning of
a store without the tag while ``non_inferable_only`` is on (REST, tool call, MCP: the same
service), and the context response saying when the filter left nothing."""

import pytest

from memory.core.models.memory import Memory
from memory.core.retrieval.filtering import (
    FILTER_EMPTIED,
    NON_INFERABLE_GUIDANCE,
    TAG_MISSING,
)
from memory.prompting.strategies import (
    CONTEXT_FILTER_NOTE,
    CONTEXT_WRITE_INSTRUCTION,
    SELF_EDITING_INSTRUCTION,
    TOOL_BASED_WRITE_INSTRUCTION,
)
from persistence.services.companies import company_config_set
from synthorg.tools import registered_tools

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"
CONTEXT = "/api/v1/memories/context"
CALL = "/api/v1/memories/tools/call"
WARNING = {"code": "non_inferable_tag_missing", "message": TAG_MISSING}


def only_non_inferable(company, strategy="context"):
    company_config_set(
        company=company,
        data={"memory": {"retrieval": {"non_inferable_only": True, "strategy": strategy}}},
    )


def post(caller, url, body, expect):
    response = caller.client.post(url, body, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def test_guidance_says_what_qualifies_and_how_to_tag():
    assert "'non-inferable'" in NON_INFERABLE_GUIDANCE
    for phrase in ("design rationale", "team decisions", "why not X", "cross-repo knowledge"):
        assert phrase in NON_INFERABLE_GUIDANCE
    assert NON_INFERABLE_GUIDANCE in TOOL_BASED_WRITE_INSTRUCTION
    assert NON_INFERABLE_GUIDANCE in SELF_EDITING_INSTRUCTION
    specs = {spec.name: spec for spec in registered_tools()}
    for name in ("store_memory", "archival_memory_write"):
        definition = specs[name].openai_definition()["function"]
        assert definition["description"].endswith(NON_INFERABLE_GUIDANCE)
        tags = definition["parameters"]["properties"]["tags"]["description"]
        assert tags == f"Labels. {NON_INFERABLE_GUIDANCE}"


@pytest.mark.parametrize(
    ("strategy", "instruction"),
    [("tool_based", TOOL_BASED_WRITE_INSTRUCTION), ("self_editing", SELF_EDITING_INSTRUCTION)],
)
def test_the_strategies_instructions_carry_the_guidance(caller, strategy, instruction):
    company_config_set(
        company=caller.agent.company, data={"memory": {"retrieval": {"strategy": strategy}}}
    )
    body = post(caller, CONTEXT, {"query": "deploy billing", "token_budget": 300}, 200)
    assert body["messages"][-1]["role"] == "system"
    assert NON_INFERABLE_GUIDANCE in body["messages"][-1]["content"]
    assert instruction.strip() in body["messages"][-1]["content"]


def test_rest_store_without_the_tag_is_stored_with_an_advisory_warning(caller):
    only_non_inferable(caller.agent.company)
    body = post(
        caller, MEMORIES, {"content": "We chose Postgres over Mongo.", "category": "semantic"}, 201
    )
    assert body == {
        "id": body["id"],
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
        "warnings": [WARNING],
    }
    assert Memory.objects.get(pk=body["id"]).tags == []
    tagged = post(
        caller,
        MEMORIES,
        {"content": "Billing deploys Fridays.", "category": "semantic", "tags": ["Non-Inferable"]},
        201,
    )
    assert "warnings" not in tagged
    assert Memory.objects.get(pk=tagged["id"]).tags == ["non-inferable"]
    # The near duplicate answers with the existing id, and the same advice
    again = post(
        caller, MEMORIES, {"content": "We chose Postgres over Mongo.", "category": "semantic"}, 200
    )
    assert again == {**body, "deduplicated": True}


def test_rest_batch_warns_per_memory(caller):
    only_non_inferable(caller.agent.company)
    body = post(
        caller,
        MEMORIES,
        {
            "memories": [
                {
                    "content": "Why not Kafka: the ops team cannot run it.",
                    "category": "semantic",
                    "tags": ["non-inferable"],
                },
                {"content": "Ana leads billing.", "category": "social"},
            ]
        },
        201,
    )
    first, second = body["results"]
    assert "warnings" not in first
    assert second["warnings"] == [WARNING]
    assert Memory.objects.count() == 2


def test_no_warning_when_the_filter_is_off_or_nothing_is_stored(caller, peer):
    body = post(caller, MEMORIES, {"content": "We chose Postgres.", "category": "semantic"}, 201)
    assert set(body) == {"id", "stored", "deduplicated", "embedding_status"}
    only_non_inferable(peer.agent.company)
    peer.agent.memory_level = "none"
    peer.agent.save()
    nothing = post(peer, MEMORIES, {"content": "We chose Postgres.", "category": "semantic"}, 200)
    assert nothing == {"id": None, "stored": False, "deduplicated": False, "embedding_status": None}


def test_tool_calls_answer_with_the_same_warning(caller):
    only_non_inferable(caller.agent.company)
    stored = post(
        caller, CALL, {"name": "store_memory", "arguments": {"content": "We chose Postgres."}}, 200
    )
    memory_id = stored["data"]["id"]
    assert stored["data"] == {
        "id": memory_id,
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
        "warnings": [WARNING],
    }
    assert stored["content"] == f"Memory stored with id {memory_id}. {TAG_MISSING}"
    published = post(
        caller,
        CALL,
        {"name": "publish_shared_knowledge", "arguments": {"content": "Staging resets at 02:00."}},
        200,
    )
    assert published["data"]["warnings"] == [WARNING]
    tagged = post(
        caller,
        CALL,
        {
            "name": "store_memory",
            "arguments": {"content": "Why not Kafka: no ops.", "tags": ["non-inferable"]},
        },
        200,
    )
    assert "warnings" not in tagged["data"]
    assert tagged["content"] == f"Memory stored with id {tagged['data']['id']}."


def test_archival_write_warns_too(caller):
    only_non_inferable(caller.agent.company, strategy="self_editing")
    written = post(
        caller,
        CALL,
        {"name": "archival_memory_write", "arguments": {"content": "We chose Postgres."}},
        200,
    )
    assert written["data"]["warnings"] == [WARNING]
    assert Memory.objects.get(pk=written["data"]["id"]).tags == []


def test_context_says_when_the_filter_emptied_it(caller):
    only_non_inferable(caller.agent.company)
    post(
        caller,
        MEMORIES,
        {"content": "The billing service deploys every Friday.", "category": "semantic"},
        201,
    )
    post(
        caller,
        MEMORIES,
        {"content": "Billing deploys need a change ticket.", "category": "semantic"},
        201,
    )
    body = post(caller, CONTEXT, {"query": "billing deploys", "token_budget": 500}, 200)
    assert body == {
        "messages": [  # the agent is told what to tag, and that untagged ones stay out
            {"role": "system", "content": CONTEXT_WRITE_INSTRUCTION + CONTEXT_FILTER_NOTE}
        ],
        "included": [],
        "dropped": [],
        "tokens_used": 0,
        "token_budget": 500,
        "degraded": [],
        "warnings": [
            {"code": "non_inferable_filter_emptied", "message": FILTER_EMPTIED.format(count=2)}
        ],
    }
    tool = post(
        caller, CALL, {"name": "get_memory_context", "arguments": {"query": "billing deploys"}}, 200
    )
    assert tool["data"]["warnings"] == body["warnings"]
    assert tool["content"] == " ".join(
        [CONTEXT_WRITE_INSTRUCTION + CONTEXT_FILTER_NOTE, FILTER_EMPTIED.format(count=2)]
    )


def test_context_without_warning_when_a_tagged_memory_survives(caller):
    only_non_inferable(caller.agent.company)
    post(
        caller,
        MEMORIES,
        {"content": "The billing service deploys every Friday.", "category": "semantic"},
        201,
    )
    kept = post(
        caller,
        MEMORIES,
        {
            "content": "Billing deploys need a change ticket.",
            "category": "semantic",
            "tags": ["non-inferable"],
        },
        201,
    )
    body = post(caller, CONTEXT, {"query": "billing deploys", "token_budget": 500}, 200)
    assert [entry["id"] for entry in body["included"]] == [kept["id"]]
    assert "warnings" not in body
