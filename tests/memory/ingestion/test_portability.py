"""Ingestion's tables in the content registry: exported per agent, erased with the agent."""

import pytest

from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    ExtractionRun,
    JournalEntry,
)
from memory.ingestion.services.extraction import conversation_extract
from persistence.content_registry import content_kind
from persistence.services.erasure import agent_erase
from tests.memory.ingestion.conftest import fact, flush, reply

pytestmark = pytest.mark.django_db


def test_export_and_erasure_cover_conversations_runs_and_journal(caller, peer, llm):
    conversation = flush(caller.agent, ["Ana said billing deploys on Fridays."])
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    conversation_extract(conversation=conversation, force=True)
    flush(peer.agent, ["The peer's own conversation."])

    messages = list(content_kind("conversation_message").export(caller.company, caller.agent))
    assert [(m["agent"], m["seq"], m["content"]) for m in messages] == [
        (caller.agent.name, 1, "Ana said billing deploys on Fridays.")
    ]
    [run] = content_kind("extraction_run").export(caller.company, caller.agent)
    assert run["facts"][0]["content"] == "Billing deploys on Fridays."
    [entry] = content_kind("journal_entry").export(caller.company, caller.agent)
    assert "Billing deploys on Fridays." in entry["markdown"]

    report = agent_erase(agent=caller.agent)
    assert {
        k: report.counts[k]
        for k in (
            "conversation messages",
            "extraction runs",
            "journal entries",
            "dream diary entries",
            "conversations",
        )
    } == {
        "conversation messages": 1,
        "extraction runs": 1,
        "journal entries": 1,
        "dream diary entries": 0,
        "conversations": 1,
    }
    assert not Conversation.objects.filter(agent=caller.agent).exists()
    assert not ExtractionRun.objects.filter(agent=caller.agent).exists()
    assert not JournalEntry.objects.filter(agent=caller.agent).exists()
    assert ConversationMessage.objects.filter(agent=peer.agent).count() == 1
