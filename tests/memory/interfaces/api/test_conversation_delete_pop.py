"""Deleting a conversation (``DELETE /conversations/{id}``) and removing its last message
(``DELETE /conversations/{id}/messages/last``): what goes, what stays (the memories formed),
the numbering afterwards, the refusals, and that another agent's conversation of the same id
is never touched."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.ingestion.models import Conversation, ConversationMessage, ExtractionRun
from memory.ingestion.services.extraction import conversation_extract
from persistence.models import AuditEntry
from tests.conftest import make_agent_caller

pytestmark = pytest.mark.django_db

MESSAGES = "/api/v1/conversations/{}/messages"
DETAIL = "/api/v1/conversations/{}"
LAST = "/api/v1/conversations/{}/messages/last"
TURNS = [
    {"role": "user", "content": "Billing deploys move to Fridays at noon UTC."},
    {"role": "assistant", "content": "Understood, Friday noon UTC for billing."},
    {"role": "user", "content": "And the tax service deploys on Mondays."},
]


def flush(caller, messages, conversation="chat-1"):
    response = caller.client.post(
        MESSAGES.format(conversation), {"messages": messages}, format="json"
    )
    assert response.status_code == 202, response.json()
    return response.json()


def test_delete_removes_the_conversation_and_keeps_its_memories(caller, peer):
    flush(caller, TURNS)
    flush(peer, TURNS[:1])  # the same id, another agent: untouched
    conversation = Conversation.objects.get(agent=caller.agent)
    run = conversation_extract(conversation=conversation, force=True)
    assert run is not None and run.added == 3
    formed = set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True))
    assert len(formed) == 3

    response = caller.client.delete(DETAIL.format("chat-1"))
    assert response.status_code == 204
    assert not Conversation.objects.filter(agent=caller.agent).exists()
    assert not ConversationMessage.objects.filter(agent=caller.agent).exists()
    assert not ExtractionRun.objects.filter(conversation_id=conversation.pk).exists()
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True)) == formed
    entry = AuditEntry.objects.get(action_type="conversation.deleted")
    assert (entry.company_id, entry.actor_agent_id, entry.target_id) == (
        caller.agent.company_id, caller.agent.pk, "chat-1",
    )  # fmt: skip
    assert entry.details == {"agent_id": caller.agent.pk, "messages_deleted": 3}
    assert ConversationMessage.objects.filter(agent=peer.agent).count() == 1

    again = flush(caller, TURNS[2:])
    assert (again["first_seq"], again["last_seq"]) == (1, 1)  # a new conversation

    missing = caller.client.delete(DETAIL.format("chat-404"))
    assert missing.status_code == 404
    assert missing.json()["code"] == "conversation_not_found"


def test_an_agent_cannot_delete_or_pop_another_agents_conversation(caller, outsider):
    flush(caller, TURNS)
    for url in (DETAIL, LAST):
        response = outsider.client.delete(url.format("chat-1"))
        assert response.status_code == 404
        assert response.json()["code"] == "conversation_not_found"
    assert outsider.client.get(DETAIL.format("chat-1")).status_code == 404
    assert ConversationMessage.objects.filter(agent=caller.agent).count() == 3
    assert not AuditEntry.objects.filter(action_type="conversation.deleted").exists()


def test_pop_removes_the_last_message_and_the_next_flush_takes_its_seq(caller):
    ids = flush(caller, TURNS)["message_ids"]
    response = caller.client.delete(LAST.format("chat-1"))
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["seq"], body["role"], body["content"]) == (
        ids[2], 3, "user", TURNS[2]["content"],
    )  # fmt: skip
    assert body["conversation_id"] == "chat-1"
    conversation = Conversation.objects.get(agent=caller.agent)
    rows = list(ConversationMessage.objects.filter(conversation=conversation).order_by("seq"))
    assert [row.pk for row in rows] == ids[:2]
    assert conversation.message_count == 2
    detail = caller.client.get(DETAIL.format("chat-1")).json()
    assert (detail["conversation_id"], detail["message_count"]) == ("chat-1", 2)
    assert conversation.pending_tokens == sum(row.token_count for row in rows)

    again = flush(caller, [{"role": "user", "content": "The tax service deploys on Tuesdays."}])
    assert (again["first_seq"], again["last_seq"]) == (3, 3)

    assert caller.client.delete(LAST.format("chat-1")).json()["seq"] == 3
    assert caller.client.delete(LAST.format("chat-1")).json()["seq"] == 2
    assert caller.client.delete(LAST.format("chat-1")).json()["seq"] == 1
    empty = caller.client.delete(LAST.format("chat-1"))
    assert empty.status_code == 404
    assert empty.json()["code"] == "conversation_empty"
    conversation.refresh_from_db()
    assert (conversation.message_count, conversation.pending_tokens) == (0, 0)


def test_a_message_flushed_after_a_pop_of_an_extracted_one_is_extracted(caller):
    flush(caller, TURNS)
    conversation = Conversation.objects.get(agent=caller.agent)
    conversation_extract(conversation=conversation, force=True)
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (3, 3)

    caller.client.delete(LAST.format("chat-1"))
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (2, 2)
    assert (conversation.pending_tokens, conversation.extraction_due_at) == (0, None)
    # the memory formed from the removed message stays
    assert Memory.objects.filter(agent=caller.agent, content=TURNS[2]["content"]).exists()

    flush(caller, [{"role": "user", "content": "The tax service deploys on Tuesdays now."}])
    conversation.refresh_from_db()
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.first_seq, run.last_seq, run.added) == (3, 3, 1)
    assert Memory.objects.filter(
        agent=caller.agent, content="The tax service deploys on Tuesdays now."
    ).exists()


def test_refused_while_an_extraction_run_holds_the_messages(caller):
    flush(caller, TURNS)
    conversation = Conversation.objects.get(agent=caller.agent)
    run = ExtractionRun.objects.create(
        company_id=caller.agent.company_id,
        agent=caller.agent,
        conversation=conversation,
        trigger="debounce",
        first_seq=1,
        last_seq=3,
        message_count=3,
        status=ExtractionRun.Status.RUNNING,
        created_at=timezone.now(),
        # by design: the run's own lease (the kernel's) holds the messages
        updated_at=timezone.now(),
        claimed_until=timezone.now() + timedelta(minutes=2),
    )
    for url in (DETAIL, LAST):
        response = caller.client.delete(url.format("chat-1"))
        assert response.status_code == 409
        assert response.json()["code"] == "conversation_extraction_running"
    assert ConversationMessage.objects.filter(conversation=conversation).count() == 3

    run.claimed_until = timezone.now() - timedelta(seconds=1)  # a dead worker's
    run.save(update_fields=["claimed_until"])
    assert caller.client.delete(LAST.format("chat-1")).status_code == 200
    assert caller.client.delete(DETAIL.format("chat-1")).status_code == 204


def test_a_session_agents_conversation_is_deleted_the_same_way(db):
    caller = make_agent_caller(memory_level="session")
    response = caller.client.post(
        MESSAGES.format("chat-s"), {"messages": TURNS, "session_id": "s-1"}, format="json"
    )
    assert response.status_code == 202
    assert caller.client.delete(DETAIL.format("chat-s")).status_code == 204
    assert not Conversation.objects.filter(agent=caller.agent).exists()
