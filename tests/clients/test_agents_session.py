"""``synthorg_memory.agents.SynthOrgSession`` (the OpenAI Agents SDK's ``Session``) against
the real server: the protocol as the example drives it, then ``Runner.run`` with the session
and the repo's strict OpenAI-wire stand-in as the model."""

import asyncio
import json

import pytest
from agents.memory import Session

from memory.ingestion.models import Conversation, ConversationMessage
from synthorg_memory import MemoryClient
from synthorg_memory.agents import MARKER, SynthOrgSession
from tests.clients.examples import example
from tests.support.llm_provider import PROFILES, LLMProviderStandIn
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ITEMS = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "18°C, sunny"},
    {"role": "assistant", "content": "It is 18°C and sunny in Paris."},
]


def test_the_session_protocol(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    out = asyncio.run(example("agents_session").session_flow(live_server_url, caller.raw_key))
    assert out["everything"] == ITEMS
    assert out["latest_two"] == ITEMS[2:]
    assert out["popped"] == ITEMS[3]
    assert out["after_pop"] == ITEMS[:3]
    assert out["after_clear"] == [] and out["pop_empty"] is None
    assert not Conversation.objects.filter(agent=caller.agent).exists()


def test_the_rows_and_a_sync_client(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        session = SynthOrgSession("s-1", client)
        assert isinstance(session, Session)
        asyncio.run(session.add_items(ITEMS))
        rows = list(ConversationMessage.objects.filter(agent=caller.agent).order_by("seq"))
        assert [(r.seq, r.role, r.name) for r in rows] == [
            (1, "user", ""), (2, "assistant", MARKER), (3, "tool", MARKER), (4, "assistant", ""),
        ]  # fmt: skip
        assert [json.loads(r.content) for r in rows[1:3]] == ITEMS[1:3]
        assert rows[0].content == ITEMS[0]["content"]
        assert asyncio.run(session.get_items(limit=10)) == ITEMS
        assert asyncio.run(session.get_items(limit=0)) == []
        session.session_settings.limit = 1
        assert asyncio.run(session.get_items()) == ITEMS[3:]
        assert asyncio.run(SynthOrgSession("s-1", client).pop_item()) == ITEMS[3]
        assert asyncio.run(session.pop_item()) == ITEMS[2]
        asyncio.run(session.add_items([{"role": "user", "content": "Thanks!"}]))
        rows = ConversationMessage.objects.filter(agent=caller.agent).order_by("seq")
        assert [(r.seq, r.content) for r in rows][2:] == [(3, "Thanks!")]

    other = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=other.raw_key) as client:
        theirs = SynthOrgSession("s-1", client)
        assert asyncio.run(theirs.get_items()) == []
        assert asyncio.run(theirs.pop_item()) is None
        asyncio.run(theirs.clear_session())
    assert ConversationMessage.objects.filter(agent=caller.agent).count() == 3


def test_the_runner_keeps_its_turns_in_the_session(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    answers = iter(["Noted: billing deploys on Fridays.", "Billing deploys on Fridays."])
    with LLMProviderStandIn(PROFILES["openai"], answer=lambda body: next(answers)) as llm:
        out = asyncio.run(
            example("agents_session").runner_flow(
                live_server_url,
                caller.raw_key,
                llm_base_url=llm.base_url,
                llm_api_key="sk-stand-in",
                model="gpt-4o-mini",
            )
        )
        second_request = llm.chat_requests[1].json()
    assert out["answers"] == ["Noted: billing deploys on Fridays.", "Billing deploys on Fridays."]
    # the second turn's prompt carried the first turn, read back from the session
    sent = [(m["role"], m.get("content")) for m in second_request["messages"]]
    assert sent == [
        ("system", "Answer in one sentence."),
        ("user", "Billing deploys on Fridays; remember it."),
        ("assistant", "Noted: billing deploys on Fridays."),
        ("user", "When does billing deploy?"),
    ]
    rows = ConversationMessage.objects.filter(
        agent=caller.agent, conversation__external_id="agent-run-2"
    ).order_by("seq")
    assert [(r.role, r.name) for r in rows] == [
        ("user", ""), ("assistant", MARKER), ("user", ""), ("assistant", MARKER),
    ]  # fmt: skip
    assert [item.get("role") for item in out["items"]] == ["user", "assistant"] * 2
