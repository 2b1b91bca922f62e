"""Flushing and paging conversation messages through the REST API."""

import pytest
from django_q.models import Schedule

from memory.ingestion.models import Conversation, ConversationMessage
from memory.ingestion.scheduling import schedule_name
from persistence.services.projects import project_close
from tests.conftest import make_agent_caller
from tests.persistence.factories import ProjectFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversations/{}/messages"


def flush(caller, conversation="chat-1", messages=None, **extra):
    messages = messages or [
        {"role": "user", "content": "Billing deploys move to Fridays at noon UTC."},
        {"role": "assistant", "content": "Understood, Friday noon UTC for billing."},
    ]
    return caller.client.post(
        URL.format(conversation), {"messages": messages, **extra}, format="json"
    )


def test_flush_answers_202_and_stores_messages_in_order(caller):
    response = flush(caller)
    assert response.status_code == 202
    body = response.json()
    rows = list(ConversationMessage.objects.filter(agent=caller.agent).order_by("seq"))
    assert body["stored"] is True
    assert body["accepted"] == 2
    assert body["message_ids"] == [r.pk for r in rows]
    assert (body["first_seq"], body["last_seq"]) == (1, 2)
    assert [(r.seq, r.role, r.content) for r in rows] == [
        (1, "user", "Billing deploys move to Fridays at noon UTC."),
        (2, "assistant", "Understood, Friday noon UTC for billing."),
    ]
    conversation = Conversation.objects.get(agent=caller.agent, external_id="chat-1")
    assert conversation.message_count == 2
    assert conversation.pending_tokens == sum(r.token_count for r in rows) > 0
    assert conversation.extraction_due_at is not None

    second = flush(caller, messages=[{"role": "user", "content": "And the tax service?"}])
    assert second.json()["first_seq"] == 3
    assert ConversationMessage.objects.filter(conversation=conversation).count() == 3


def test_a_burst_of_flushes_keeps_one_schedule_pushed_forward(caller):
    due = []
    for i in range(20):
        response = flush(caller, messages=[{"role": "user", "content": f"message {i}"}])
        due.append(response.json()["extraction_due_at"])
    conversation = Conversation.objects.get(agent=caller.agent)
    schedules = Schedule.objects.filter(name=schedule_name(conversation.pk))
    assert schedules.count() == 1
    schedule = schedules.get()
    assert schedule.schedule_type == Schedule.ONCE
    assert schedule.func == "memory.ingestion.tasks.extract_conversation"
    assert schedule.next_run == conversation.extraction_due_at
    assert due == sorted(due)


def test_get_pages_messages_oldest_first(caller):
    for i in range(5):
        flush(caller, messages=[{"role": "user", "content": f"note number {i}"}])
    first = caller.client.get(URL.format("chat-1"), {"page_size": 2})
    assert first.status_code == 200
    page = first.json()
    assert [m["seq"] for m in page["results"]] == [1, 2]
    assert page["results"][0] == {
        "id": page["results"][0]["id"],
        "conversation_id": "chat-1",
        "seq": 1,
        "role": "user",
        "content": "note number 0",
        "name": "",
        "created_at": page["results"][0]["created_at"],
        "received_at": page["results"][0]["received_at"],
        "token_count": 3,
    }
    second = caller.client.get(page["next"])
    assert [m["seq"] for m in second.json()["results"]] == [3, 4]


def test_get_searches_full_text_and_filters(caller):
    flush(
        caller,
        messages=[
            {"role": "user", "content": "The deployments of billing are on Fridays."},
            {"role": "assistant", "content": "Tax reports are due monthly."},
            {"role": "user", "content": "Who deploys billing?"},
        ],
    )
    found = caller.client.get(URL.format("chat-1"), {"q": "deploy billing"}).json()
    assert [m["seq"] for m in found["results"]] == [1, 3]
    users = caller.client.get(URL.format("chat-1"), {"role": "assistant"}).json()
    assert [m["seq"] for m in users["results"]] == [2]
    after = caller.client.get(URL.format("chat-1"), {"after_seq": 1, "before_seq": 3}).json()
    assert [m["seq"] for m in after["results"]] == [2]


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"messages": []}, "messages", "empty"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role", "invalid_choice"),
        ({"messages": [{"role": "user", "content": "   "}]}, "messages.0.content", "blank"),
        (
            {"messages": [{"role": "user", "content": "x", "mood": "ok"}]},
            "messages.0.mood",
            "unknown_field",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "extra": 1}, "extra", "unknown_field"),
    ],
)
def test_invalid_flush_is_400_and_stores_nothing(caller, body, field, code):
    response = caller.client.post(URL.format("chat-1"), body, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    errors = response.json()["errors"]
    assert errors[0]["field"] == field
    assert errors[0]["code"] == code
    assert not ConversationMessage.objects.exists()
    assert not Conversation.objects.exists()


def test_future_created_at_is_rejected(caller):
    response = flush(
        caller, messages=[{"role": "user", "content": "x", "created_at": "2999-01-01T00:00:00Z"}]
    )
    assert response.status_code == 400
    assert response.json()["code"] == "created_in_future"
    assert response.json()["errors"][0]["field"] == "messages.0.created_at"
    assert not ConversationMessage.objects.exists()


def test_memory_level_none_stores_no_messages(company):
    silent = make_agent_caller(company=company, memory_level="none")
    response = flush(silent)
    assert response.status_code == 200
    assert response.json() == {
        "conversation_id": "chat-1",
        "stored": False,
        "accepted": 0,
        "message_ids": [],
        "first_seq": None,
        "last_seq": None,
        "extraction_due_at": None,
        "subject": None,
    }
    assert not ConversationMessage.objects.exists()
    assert not Conversation.objects.exists()


def test_session_level_requires_session_and_is_purged_with_it(company):
    agent = make_agent_caller(company=company, memory_level="session")
    missing = flush(agent)
    assert missing.status_code == 400
    assert missing.json()["code"] == "session_id_required"
    assert flush(agent, session_id="s-1").status_code == 202
    other = flush(agent, session_id="s-2")
    assert other.status_code == 409
    assert other.json()["code"] == "conversation_binding_mismatch"
    assert ConversationMessage.objects.count() == 2
    ended = agent.client.post("/api/v1/sessions/s-1/end")
    assert ended.status_code == 200
    assert not Conversation.objects.exists()
    assert not ConversationMessage.objects.exists()


def test_project_level_binds_to_an_open_project_and_is_purged_on_close(company):
    agent = make_agent_caller(company=company, memory_level="project")
    project = ProjectFactory(company=company)
    assert flush(agent).json()["code"] == "project_id_required"
    foreign = ProjectFactory()
    assert flush(agent, project_id=foreign.pk).json()["code"] == "project_not_found"
    assert flush(agent, project_id=project.pk).status_code == 202
    project_close(project=project)
    assert not ConversationMessage.objects.exists()
    closed = flush(agent, conversation="chat-2", project_id=project.pk)
    assert closed.status_code == 409
    assert closed.json()["code"] == "project_closed"


def test_conversations_are_isolated_between_agents_and_companies(caller, peer, outsider):
    flush(caller)
    for other in (peer, outsider):
        assert other.client.get(URL.format("chat-1")).status_code == 404
        assert other.client.get(URL.format("chat-1")).json()["code"] == "conversation_not_found"
        assert other.client.get("/api/v1/conversations/chat-1/extractions").status_code == 404
    # The same conversation id is a different conversation for another agent.
    flush(peer, messages=[{"role": "user", "content": "peer's own"}])
    assert Conversation.objects.filter(external_id="chat-1").count() == 2
    mine = caller.client.get(URL.format("chat-1")).json()["results"]
    assert [m["content"] for m in mine] == [
        "Billing deploys move to Fridays at noon UTC.",
        "Understood, Friday noon UTC for billing.",
    ]


def test_humans_cannot_flush(human_client):
    response = human_client.post(
        URL.format("chat-1"), {"messages": [{"role": "user", "content": "x"}]}, format="json"
    )
    assert response.status_code == 403


def test_conversations_are_listed_most_recent_first(caller, peer):
    flush(caller, conversation="older")
    flush(caller, conversation="newer", messages=[{"role": "user", "content": "hi"}])
    flush(peer, conversation="peers")
    response = caller.client.get("/api/v1/conversations")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [c["conversation_id"] for c in results] == ["newer", "older"]
    assert {
        k: results[1][k]
        for k in (
            "level",
            "session_id",
            "project_id",
            "message_count",
            "extracted_through_seq",
            "verbatim_through_seq",
        )
    } == {
        "level": "persistent",
        "session_id": "",
        "project_id": None,
        "message_count": 2,
        "extracted_through_seq": 0,
        "verbatim_through_seq": 0,
    }


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"after_seq": 2**31}, "after_seq"),
        ({"page_size": 501}, "page_size"),
        ({"sort": "seq"}, "sort"),
    ],
)
def test_bad_list_parameters_are_400(caller, params, field):
    flush(caller)
    response = caller.client.get(URL.format("chat-1"), params)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
