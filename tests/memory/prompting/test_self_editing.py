"""The self-editing strategy: core memory budget and lock, archival and recall tools."""

import uuid

import pytest

from memory.core.models.memory import Memory
from memory.core.retrieval.formatting import MEMORY_HEADER, untrusted_content_directive
from memory.ingestion.models import Conversation
from memory.prompting.context import ContextRequest
from memory.prompting.strategies import SELF_EDITING_INSTRUCTION, strategy_for
from persistence.models import AuditEntry
from persistence.selectors.config import company_config
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

CALL = "/api/v1/memories/tools/call"


def self_editing(company, **settings):
    company_config_set(
        company=company,
        data={"memory": {"retrieval": {"strategy": "self_editing"}, "self_editing": settings}},
    )


def call(caller, name, expect=200, **arguments):
    response = caller.client.post(CALL, {"name": name, "arguments": arguments}, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def test_core_memory_is_always_in_the_prompt(caller):
    self_editing(caller.company)
    first = call(caller, "core_memory_write", content="I am the billing agent.")["data"]["id"]
    second = call(caller, "core_memory_write", content="My manager is Ana.")["data"]["id"]
    memory = Memory.objects.get(pk=first)
    assert (memory.category, memory.tags, memory.source) == ("semantic", ["core"], "core_memory")

    prepared = strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
        ContextRequest.build(query_text="anything at all", token_budget=1000, include_org=False)
    )
    assert [e.key for e in prepared.included] == [first, second]
    assert prepared.messages[0] == {"role": "system", "content": untrusted_content_directive()}
    assert "I am the billing agent." in prepared.messages[1]["content"]
    assert prepared.messages[-1] == {"role": "system", "content": SELF_EDITING_INSTRUCTION}

    read = call(caller, "core_memory_read")
    assert [e["id"] for e in read["data"]["entries"]] == [first, second]
    assert read["data"]["core_token_budget"] == 500
    assert read["content"].startswith(f"- [{first}] I am the billing agent.")


def test_core_budget_refuses_overflow_and_allows_replacing(caller):
    self_editing(caller.company, core_token_budget=60)
    kept = call(caller, "core_memory_write", content="x" * 60)["data"]["id"]
    full = call(caller, "core_memory_write", 422, content="y" * 120)
    assert full["code"] == "core_memory_full" and full["core_token_budget"] == 60
    assert Memory.objects.count() == 1
    replaced = call(caller, "core_memory_write", content="short", replace_id=kept)
    assert replaced["data"]["id"] == kept and Memory.objects.get(pk=kept).content == "short"
    assert AuditEntry.objects.filter(action_type="memory.core_written").count() == 2
    other = call(caller, "core_memory_write", 404, content="z", replace_id=str(uuid.uuid4()))
    assert other["code"] == "memory_not_found"


def test_prompt_budget_drops_what_does_not_fit(caller):
    self_editing(caller.company, core_token_budget=200)
    old = call(caller, "core_memory_write", content="old " * 30)["data"]["id"]
    new = call(caller, "core_memory_write", content="new " * 30)["data"]["id"]
    prepared = strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
        ContextRequest.build(query_text="q", token_budget=60, include_org=False)
    )
    assert [e.key for e in prepared.included] == [new]  # the most recently written wins
    assert [e.key for e in prepared.dropped] == [old]
    assert prepared.tokens_used <= 60


def test_core_writes_can_be_locked(caller, peer):
    self_editing(caller.company, allow_core_writes=False)
    refused = call(caller, "core_memory_write", 403, content="I may not.")
    assert refused["code"] == "core_writes_disabled"
    self_editing(caller.company, locked_agents=[caller.agent.name])
    assert call(caller, "core_memory_write", 403, content="Still not.")["code"] == (
        "core_writes_disabled"
    )
    call(peer, "core_memory_write", content="The peer may.")
    assert list(Memory.objects.values_list("agent_id", flat=True)) == [peer.agent.pk]


def test_archival_tools(caller):
    self_editing(caller.company, archival_search_limit=2, archival_write_categories=["episodic"])
    denied = call(caller, "archival_memory_write", 403, content="A fact.", category="semantic")
    assert denied["code"] == "category_write_denied"
    reserved = call(
        caller, "archival_memory_write", 400, content="x", category="episodic", tags=["core"]
    )
    assert reserved["code"] == "reserved_tag"
    assert not Memory.objects.exists()
    for text in (
        "Deploy one went fine.",
        "Deploy two broke checkout.",
        "Deploy three rolled back.",
    ):
        call(caller, "archival_memory_write", content=text, category="episodic")
    call(caller, "core_memory_write", content="Deploy policy: never on Fridays.")
    found = call(caller, "archival_memory_search", query="deploy", limit=10)["data"]["results"]
    assert len(found) == 2  # capped by archival_search_limit
    assert all("core" not in r["memory"]["tags"] for r in found)


def test_recall_is_the_conversation_history(caller, outsider):
    self_editing(caller.company)
    for content, role in (
        ("hi", "user"),
        ("hello! the deploy is at noon", "assistant"),
        ("hi", "user"),
    ):
        written = call(caller, "recall_memory_write", content=content, role=role)
    assert written["data"]["conversation_id"] == "main" and written["data"]["last_seq"] == 3
    assert written["content"] == "Recorded as turn 3 of conversation main."
    conversation = Conversation.objects.get(agent=caller.agent)
    assert list(conversation.messages.order_by("seq").values_list("role", "content")) == [
        ("user", "hi"),
        ("assistant", "hello! the deploy is at noon"),
        ("user", "hi"),
    ]
    assert not Memory.objects.exists()  # recall is conversation history, not memories
    call(caller, "recall_memory_write", content="other thread", conversation_id="side")
    call(outsider, "recall_memory_write", content="the deploy is at dawn")

    recent = call(caller, "recall_memory_read", limit=2)["data"]["results"]
    assert [(r["conversation_id"], r["content"]) for r in recent] == [
        ("side", "other thread"),
        ("main", "hi"),
    ]
    found = call(caller, "recall_memory_read", query="deploys")
    assert [r["content"] for r in found["data"]["results"]] == ["hello! the deploy is at noon"]
    assert found["content"].startswith("- [main #2] ")
    only_side = call(caller, "recall_memory_read", conversation_id="side")["data"]["results"]
    assert [r["content"] for r in only_side] == ["other thread"]
    unknown = call(caller, "recall_memory_read", 404, conversation_id="nope")
    assert unknown["code"] == "conversation_not_found"
    invalid = call(caller, "recall_memory_write", 400, content="x", role="narrator")
    assert invalid["code"] == "invalid_tool_arguments"


@pytest.mark.parametrize("point", ["system", "user"])
def test_core_memory_goes_where_injection_point_says(caller, point):
    company_config_set(
        company=caller.company,
        data={"memory": {"retrieval": {"strategy": "self_editing", "injection_point": point}}},
    )
    first = call(caller, "core_memory_write", content="I am the billing agent.")["data"]["id"]
    response = caller.client.post(
        "/api/v1/memories/context",
        {"query": "who am I", "token_budget": 1000, "include_org": False},
        format="json",
    )
    assert response.status_code == 200, response.content
    fenced = f'<memory-entry meta="core, id {first}">\nI am the billing agent.\n</memory-entry>'
    assert response.json()["messages"] == [
        {"role": "system", "content": untrusted_content_directive()},
        {"role": point, "content": f"{MEMORY_HEADER}\n{fenced}"},
        {"role": "system", "content": SELF_EDITING_INSTRUCTION},
    ]
