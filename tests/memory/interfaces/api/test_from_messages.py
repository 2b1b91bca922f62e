"""``POST /memories/from-messages`` (issue 32 item 5): chat messages recorded as a
conversation with their extraction queued at once, in one call; with ``wait`` the memories
formed (or 202 when the extraction has not finished within ``timeout_seconds``)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from memory.core.models import Memory
from memory.ingestion.models import Conversation, ConversationMessage
from memory.ingestion.tasks import extract_conversation
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory

URL = "/api/v1/memories/from-messages"
MESSAGES = [
    {"role": "user", "content": "I moved to Lisbon last month and I adopted a cat."},
    {"role": "assistant", "content": "Noted: you live in Lisbon now, with a cat."},
]


@pytest.mark.django_db
def test_records_the_conversation_and_queues_its_extraction_at_once(caller):
    response = caller.client.post(URL, {"messages": MESSAGES, "subject": "user-42"}, format="json")

    assert response.status_code == 202, response.json()
    body = response.json()
    conversation = Conversation.objects.get(agent=caller.agent)
    assert body["conversation_id"] == conversation.external_id
    assert conversation.external_id.startswith("msgs-")
    assert (body["extraction"], body["memories"], body["runs"]) == ("queued", None, [])
    assert body["poll"] == f"/api/v1/conversations/{conversation.external_id}/extractions"
    assert (body["subject"], body["first_seq"], body["last_seq"]) == ("user-42", 1, 2)
    assert conversation.subject == "user-42"
    assert conversation.extraction_due_at <= timezone.now()  # queued now, not debounced
    assert list(
        ConversationMessage.objects.filter(conversation=conversation).values_list(
            "seq", "role", "content"
        )
    ) == [(1, "user", MESSAGES[0]["content"]), (2, "assistant", MESSAGES[1]["content"])]

    # the LLM cluster's task (no LLM configured here: the turns are stored verbatim)
    assert extract_conversation(conversation.pk) == "succeeded"
    memories = Memory.objects.filter(agent=caller.agent).order_by("created_at", "content")
    assert sorted(memories.values_list("content", flat=True)) == sorted(
        m["content"] for m in MESSAGES
    )
    assert set(memories.values_list("subject", flat=True)) == {"user-42"}
    runs = caller.client.get(body["poll"]).json()["results"]
    assert [(r["status"], r["first_seq"], r["last_seq"]) for r in runs] == [("succeeded", 1, 2)]


@pytest.mark.django_db
def test_appends_to_a_named_conversation_and_keeps_its_subject(caller):
    first = caller.client.post(
        URL,
        {"messages": MESSAGES, "subject": "user-42", "conversation_id": "chat-1"},
        format="json",
    )
    assert first.status_code == 202
    again = caller.client.post(
        URL,
        {"messages": MESSAGES[:1], "subject": "user-7", "conversation_id": "chat-1"},
        format="json",
    )
    assert again.status_code == 409 and again.json()["code"] == "conversation_binding_mismatch"
    more = caller.client.post(
        URL, {"messages": MESSAGES[:1], "conversation_id": "chat-1"}, format="json"
    )
    assert more.status_code == 202 and (more.json()["first_seq"], more.json()["last_seq"]) == (
        3,
        3,
    )
    assert Conversation.objects.get(agent=caller.agent).message_count == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"messages": []}, "messages", "empty"),
        ({"messages": MESSAGES, "timeout_seconds": 5}, "timeout_seconds", "timeout_without_wait"),
        ({"messages": MESSAGES, "wait": True, "timeout_seconds": 31}, "timeout_seconds", None),
        ({"messages": MESSAGES, "wait": True, "timeout_seconds": 0}, "timeout_seconds", None),
        ({"messages": MESSAGES, "subject": "a/b"}, "subject", "subject_invalid"),
        ({"messages": MESSAGES, "user_id": "u1"}, "user_id", "unknown_field"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages", None),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(caller, body, field, code):
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["errors"][0]
    assert error["field"].startswith(field)
    if code is not None:
        assert error["code"] == code
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_an_agent_of_memory_level_none_stores_nothing(company):
    silent = make_agent_caller(company=company, memory_level="none")
    response = silent.client.post(URL, {"messages": MESSAGES}, format="json")
    assert response.status_code == 200
    assert (response.json()["stored"], response.json()["extraction"]) == (False, "not_stored")
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_waiting_without_a_worker_answers_202_after_the_timeout(caller):
    response = caller.client.post(
        URL, {"messages": MESSAGES, "wait": True, "timeout_seconds": 1}, format="json"
    )
    assert response.status_code == 202
    assert response.json()["extraction"] == "queued" and response.json()["memories"] is None


@pytest.mark.django_db(transaction=True)
def test_waiting_answers_the_memories_the_extraction_formed():
    """A worker (the real extraction task, in a thread as the LLM cluster would run it)
    extracts while the call waits; the call answers 200 with what it formed."""
    caller = make_agent_caller(company=CompanyFactory())
    done = threading.Event()

    def worker():
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                conversation = Conversation.objects.filter(agent=caller.agent).first()
                if conversation is not None and conversation.message_count == 2:
                    extract_conversation(conversation.pk)
                    return
                time.sleep(0.05)
        finally:
            connection.close()
            done.set()

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    response = caller.client.post(
        URL,
        {"messages": MESSAGES, "subject": "user-42", "wait": True, "timeout_seconds": 30},
        format="json",
    )
    done.wait(60)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["extraction"] == "done"
    assert [r["status"] for r in body["runs"]] == ["succeeded"]
    formed = Memory.objects.filter(agent=caller.agent)
    assert sorted(m["id"] for m in body["memories"]) == sorted(
        str(pk) for pk in formed.values_list("pk", flat=True)
    )
    assert {m["subject"] for m in body["memories"]} == {"user-42"}
    assert sorted(m["content"] for m in body["memories"]) == sorted(m["content"] for m in MESSAGES)
