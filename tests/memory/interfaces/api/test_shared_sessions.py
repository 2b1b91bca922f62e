"""POST /shared, DELETE /shared/{id}, POST /sessions/{id}/end."""

import uuid

import pytest

from memory.core.models.memory import Memory
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from tests.conftest import make_agent_caller
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db

SHARED = "/api/v1/shared"


def publish(caller, content="Staging resets every night at 02:00 UTC.", **fields):
    body = {"content": content, "category": "procedural", **fields}
    return caller.client.post(SHARED, body, format="json")


def test_publish(caller):
    response = publish(caller, tags=["Staging"])
    assert response.status_code == 201
    row = Memory.objects.get()
    assert response.json() == {
        "id": str(row.id),
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
    }
    assert (row.is_shared, row.agent_id, row.level, row.tags) == (
        True,
        caller.agent.pk,
        "persistent",
        ["staging"],
    )
    entry = AuditEntry.objects.get(action_type="memory.shared_published")
    assert (entry.actor_agent_id, entry.target_id) == (caller.agent.pk, str(row.id))
    # Shared knowledge is not part of the agent's private memories.
    assert caller.client.get(f"/api/v1/memories/{row.id}").status_code == 404
    assert caller.client.get("/api/v1/memories").json()["count"] == 0


def test_publish_near_duplicate(caller):
    first = publish(caller).json()
    again = publish(caller, "staging resets every night at 02:00 utc")
    assert again.status_code == 200
    assert again.json() == {**first, "deduplicated": True}
    assert Memory.objects.count() == 1
    assert AuditEntry.objects.filter(action_type="memory.shared_published").count() == 1


def test_publish_works_at_memory_level_none(company):
    agent_caller = make_agent_caller(company=company, memory_level="none")
    assert publish(agent_caller).status_code == 201
    assert Memory.objects.get().is_shared


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "", "category": "semantic"}, "content"),
        ({"content": "x", "category": "nope"}, "category"),
        ({"content": "x", "category": "semantic", "session_id": "s"}, "session_id"),
        ({"content": "x", "category": "semantic", "confidence": "high"}, "confidence"),
    ],
)
def test_publish_rejects_invalid_input(caller, body, field):
    response = caller.client.post(SHARED, body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert field in [e["field"] for e in response.json()["errors"]]
    assert not Memory.objects.exists()


def test_publish_when_shared_knowledge_is_disabled(caller, company):
    company_config_set(
        company=company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    response = publish(caller)
    assert response.status_code == 403
    assert response.json()["code"] == "shared_knowledge_disabled"
    assert not Memory.objects.exists()


def test_publish_with_failing_embedder_is_pending(caller, failing_embedder):
    response = publish(caller)
    assert response.status_code == 201
    assert response.json()["embedding_status"] == "pending"


def test_retract_by_publisher(caller):
    memory_id = publish(caller).json()["id"]
    response = caller.client.delete(f"{SHARED}/{memory_id}")
    assert response.status_code == 204
    assert not Memory.objects.exists()
    entry = AuditEntry.objects.get(action_type="memory.shared_retracted")
    assert (entry.actor_agent_id, entry.target_id) == (caller.agent.pk, memory_id)


def test_only_the_publisher_may_retract(caller, peer, outsider):
    memory_id = publish(caller).json()["id"]
    response = peer.client.delete(f"{SHARED}/{memory_id}")
    assert response.status_code == 403
    assert response.json()["code"] == "not_publisher"
    response = outsider.client.delete(f"{SHARED}/{memory_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "shared_not_found"
    assert Memory.objects.filter(pk=memory_id).exists()
    assert not AuditEntry.objects.filter(action_type="memory.shared_retracted").exists()


def test_retract_of_a_private_memory_is_404(caller):
    private = MemoryFactory(agent=caller.agent)
    assert caller.client.delete(f"{SHARED}/{private.id}").status_code == 404
    assert Memory.objects.filter(pk=private.pk).exists()


# --- sessions -------------------------------------------------------------------------------


def test_session_end_purges_only_that_session(company, peer):
    agent_caller = make_agent_caller(company=company, memory_level="session")
    mine = agent_caller.agent
    MemoryFactory.create_batch(2, agent=mine, level="session", session_id="run-1")
    kept_other_session = MemoryFactory(agent=mine, level="session", session_id="run-2")
    kept_persistent = MemoryFactory(agent=mine, level="persistent")
    kept_peer = MemoryFactory(agent=peer.agent, level="session", session_id="run-1")

    response = agent_caller.client.post("/api/v1/sessions/run-1/end")
    assert response.status_code == 200
    assert response.json() == {"session_id": "run-1", "memories_purged": 2}
    assert set(Memory.objects.values_list("pk", flat=True)) == {
        kept_other_session.pk,
        kept_persistent.pk,
        kept_peer.pk,
    }
    entry = AuditEntry.objects.get(action_type="memory.session_ended")
    assert (entry.actor_agent_id, entry.target_id, entry.details) == (
        mine.pk,
        "run-1",
        {"agent_id": mine.pk, "memories_purged": 2},
    )
    again = agent_caller.client.post("/api/v1/sessions/run-1/end")
    assert again.json() == {"session_id": "run-1", "memories_purged": 0}


def test_session_end_rejects_overlong_ids(caller):
    response = caller.client.post(f"/api/v1/sessions/{'s' * 201}/end")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_session_id"
    assert not AuditEntry.objects.filter(action_type="memory.session_ended").exists()


def test_session_end_is_for_agents(human_client):
    assert human_client.post("/api/v1/sessions/run-1/end").status_code == 403


SHARED_OFF = {
    "type": "https://synthorg.dev/problems/shared_knowledge_disabled",
    "title": "Access denied",
    "status": 403,
    "detail": "Shared knowledge is disabled for this company "
    "(memory.options.shared_knowledge_base).",
    "code": "shared_knowledge_disabled",
    "errors": [],
}


def tool(caller, name, **arguments):
    return caller.client.post(
        "/api/v1/memories/tools/call", {"name": name, "arguments": arguments}, format="json"
    )


def test_shared_knowledge_off_closes_every_shared_read(caller, peer, company):
    """With ``shared_knowledge_base: false`` no agent-facing path reads shared entries: the
    explicit shared endpoints and tools answer 403 ``shared_knowledge_disabled``; searches,
    recall, lessons and context leave them out. The entries stay stored (a human may turn
    sharing on again)."""
    theirs = publish(peer, "Staging resets every night at 02:00 UTC.").json()["id"]
    mine = publish(caller, "Staging deploys need a second reviewer.").json()["id"]
    private = caller.client.post(
        "/api/v1/memories",
        {"content": "My staging deploy checklist is in my notes.", "category": "procedural"},
        format="json",
    ).json()["id"]
    # on: the shared entries are found
    found = caller.client.post(f"{SHARED}/search", {"query": "staging"}, format="json")
    assert {hit["memory"]["id"] for hit in found.json()["results"]} == {theirs, mine}

    company_config_set(
        company=company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    audited = AuditEntry.objects.count()
    # explicit shared endpoints (REST) and tools: 403, nothing written
    for response in (
        caller.client.post(f"{SHARED}/search", {"query": "staging"}, format="json"),
        caller.client.delete(f"{SHARED}/{mine}"),
        publish(caller, "Billing deploys on Fridays."),
    ):
        assert (response.status_code, response.json()) == (403, SHARED_OFF), response.content
    searched = tool(caller, "search_shared_knowledge", query="staging")
    assert (searched.status_code, searched.json()) == (403, SHARED_OFF)
    retracted = tool(caller, "retract_shared_knowledge", id=mine, confirm=True, reason="old")
    assert (retracted.status_code, retracted.json()) == (403, SHARED_OFF)
    # mixed reads: shared entries left out, silently
    search = caller.client.post(
        "/api/v1/memories/search", {"query": "staging", "include_shared": True}, format="json"
    )
    assert [hit["memory"]["id"] for hit in search.json()["results"]] == [private]
    tool_search = tool(caller, "search_memory", query="staging")
    assert [hit["memory"]["id"] for hit in tool_search.json()["data"]["results"]] == [private]
    recalled = tool(caller, "recall_memory", id=theirs)
    assert (recalled.status_code, recalled.json()["code"]) == (404, "memory_not_found")
    applied = caller.client.post(f"/api/v1/memories/{theirs}/applied")
    assert (applied.status_code, applied.json()["code"]) == (404, "memory_not_found")
    context = caller.client.post(
        "/api/v1/memories/context",
        {"query": "staging", "token_budget": 2000, "include_org": False},
        format="json",
    )
    assert [entry["id"] for entry in context.json()["included"]] == [private]
    assert "02:00 UTC" not in str(context.json()["messages"])
    # nothing changed: both entries still stored, shared, unaudited
    assert set(Memory.objects.filter(is_shared=True).values_list("id", flat=True)) == {
        uuid.UUID(theirs),
        uuid.UUID(mine),
    }
    assert AuditEntry.objects.count() == audited
