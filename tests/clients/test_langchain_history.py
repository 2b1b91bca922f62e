"""``synthorg_memory.langchain.SynthOrgChatMessageHistory`` (a LangChain
``BaseChatMessageHistory``) against the real server: the example's flow sync and async, the
rows it writes, messages other clients flushed, and isolation between agents."""

import asyncio
import json

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from memory.ingestion.models import Conversation, ConversationMessage
from synthorg_memory import MemoryClient
from synthorg_memory.langchain import MARKER, SynthOrgChatMessageHistory
from tests.clients.examples import example
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_examples_flow_sync_and_async(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    flow = example("langchain_history")
    out = flow.sync_flow(live_server_url, caller.raw_key)
    system, human, call, result, answer = out["read_back"]
    assert (type(system), system.content) == (
        SystemMessage,
        "You are the billing team's assistant.",
    )
    assert (type(human), human.content, human.name) == (
        HumanMessage, "When does billing deploy?", "ana",
    )  # fmt: skip
    assert type(call) is AIMessage
    assert call.content == ""
    assert [(c["name"], c["args"], c["id"]) for c in call.tool_calls] == [
        ("calendar", {"team": "billing"}, "c1")
    ]
    assert (type(result), result.content, result.tool_call_id) == (
        ToolMessage, "Fridays 12:00 UTC", "c1",
    )  # fmt: skip
    assert (type(answer), answer.content) == (
        AIMessage,
        "Billing deploys every Friday at noon UTC.",
    )
    assert out["after_clear"] == []
    assert not Conversation.objects.filter(agent=caller.agent, external_id="support-7").exists()

    out = asyncio.run(flow.async_flow(live_server_url, caller.raw_key))
    assert [(type(m), m.content) for m in out["read_back"]] == [
        (HumanMessage, "Remind me: who is on call?"),
        (AIMessage, "Ana is on call this week."),
    ]
    rows = ConversationMessage.objects.filter(
        agent=caller.agent, conversation__external_id="support-8"
    ).order_by("seq")
    assert [(r.seq, r.role, r.content, r.name) for r in rows] == [
        (1, "user", "Remind me: who is on call?", ""),
        (2, "assistant", "Ana is on call this week.", ""),
    ]


def test_what_is_stored_and_what_other_clients_flushed(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        history = SynthOrgChatMessageHistory(client, "chat-1")
        assert isinstance(history, BaseChatMessageHistory)
        assert history.messages == []  # no conversation yet
        history.clear()  # clearing nothing is no error
        history.add_user_message("Plain text stays plain.")
        history.add_messages([ToolMessage("42", tool_call_id="t1")])
        client.conversations.add_messages(
            "chat-1",
            [
                {"role": "tool", "content": "A tool's output, flushed directly."},
                {"role": "assistant", "content": "Flushed by another client.", "name": "bot"},
            ],
        )
        rows = list(ConversationMessage.objects.filter(agent=caller.agent).order_by("seq"))
        assert [(r.role, r.name) for r in rows] == [
            ("user", ""), ("tool", MARKER), ("tool", ""), ("assistant", "bot"),
        ]  # fmt: skip
        assert rows[0].content == "Plain text stays plain."
        assert json.loads(rows[1].content)["type"] == "tool"
        messages = history.messages
        assert [type(m) for m in messages] == [HumanMessage, ToolMessage, ChatMessage, AIMessage]
        assert (messages[2].role, messages[2].content) == ("tool", rows[2].content)
        assert (messages[3].content, messages[3].name) == ("Flushed by another client.", "bot")


def test_agents_do_not_share_a_history(live_server_url, committed):  # noqa: F811
    alice, bob = committed.agent(), committed.agent()
    with (
        MemoryClient(base_url=live_server_url, api_key=alice.raw_key) as a,
        MemoryClient(base_url=live_server_url, api_key=bob.raw_key) as b,
    ):
        SynthOrgChatMessageHistory(a, "chat-1").add_user_message("Alice's message.")
        theirs = SynthOrgChatMessageHistory(b, "chat-1")
        assert theirs.messages == []
        theirs.clear()
        theirs.add_user_message("Bob's message.")
    assert [(m.agent_id, m.content) for m in ConversationMessage.objects.order_by("agent_id")] == [
        (alice.agent.pk, "Alice's message."),
        (bob.agent.pk, "Bob's message."),
    ]
