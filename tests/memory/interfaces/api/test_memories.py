"""GET /memories (filters, pagination), GET|PATCH|DELETE /memories/{id}, GET /memories/count."""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from persistence.models import AuditEntry
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"


def store(caller, content, **fields):
    body = {"content": content, "category": fields.pop("category", "semantic"), **fields}
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return Memory.objects.get(pk=response.json()["id"])


def iso(value):
    return value.isoformat().replace("+00:00", "Z")


def expected(memory):
    return {
        "id": str(memory.id),
        "agent_id": memory.agent_id,
        "subject": memory.subject or None,
        "namespace": memory.namespace,
        "category": memory.category,
        "content": memory.content,
        "context": memory.context,
        "source": memory.source,
        "confidence": memory.confidence,
        "tags": memory.tags,
        "is_shared": memory.is_shared,
        "level": memory.level,
        "session_id": memory.session_id or None,
        "project_id": memory.project_id,
        "task_id": memory.task_id,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "expires_at": iso(memory.expires_at) if memory.expires_at else None,
        "superseded_at": iso(memory.superseded_at) if memory.superseded_at else None,
        "superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None,
        "embedding_status": memory.embedding_status,
        "embedder_id": memory.embedder_id,
        "scope": memory.scope,
        "application_count": memory.application_count,
        "last_applied_at": iso(memory.last_applied_at) if memory.last_applied_at else None,
        "procedural": None,
    }


# --- detail ---------------------------------------------------------------------------------


def test_get_own_memory(caller):
    memory = store(caller, "Redis runs on port 6380 in staging.", tags=["redis"], source="t-1")
    response = caller.client.get(f"{URL}/{memory.id}")
    assert response.status_code == 200
    assert response.json() == expected(memory)
    assert response.json()["tags"] == ["redis"]


def test_other_agents_and_companies_memories_are_404(caller, peer, outsider):
    theirs = MemoryFactory(agent=peer.agent)
    foreign = MemoryFactory(agent=outsider.agent)
    for memory in (theirs, foreign):
        for method in ("get", "patch", "delete"):
            response = getattr(caller.client, method)(
                f"{URL}/{memory.id}", {"content": "hijack"}, format="json"
            )
            assert response.status_code == 404, (method, response.json())
            assert response.json()["code"] == "memory_not_found"
    assert Memory.objects.get(pk=theirs.pk).content == theirs.content
    assert Memory.objects.count() == 2
    assert not AuditEntry.objects.filter(action_type="memory.deleted").exists()


def test_unknown_id_is_404(caller):
    response = caller.client.get(f"{URL}/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert caller.client.get(f"{URL}/not-a-uuid").status_code == 404


def test_expired_memory_is_gone(caller):
    expired = MemoryFactory(agent=caller.agent, expires_at=timezone.now() - timedelta(seconds=1))
    assert caller.client.get(f"{URL}/{expired.id}").status_code == 404
    assert caller.client.get(URL).json()["count"] == 0
    assert caller.client.get(f"{URL}/count").json() == {"count": 0, "category": None}


def test_human_cannot_use_agent_endpoints(human_client, caller):
    memory = MemoryFactory(agent=caller.agent)
    assert human_client.get(f"{URL}/{memory.id}").status_code == 403
    assert human_client.get(URL).status_code == 403


# --- list -----------------------------------------------------------------------------------


def test_list_filters_and_pagination(caller, peer):
    now = timezone.now()
    a = MemoryFactory(
        agent=caller.agent,
        category="semantic",
        namespace="ops",
        tags=["x", "y"],
        created_at=now - timedelta(days=3),
    )
    b = MemoryFactory(
        agent=caller.agent,
        category="episodic",
        namespace="ops",
        tags=["x"],
        created_at=now - timedelta(days=2),
    )
    c = MemoryFactory(
        agent=caller.agent,
        category="semantic",
        namespace="default",
        created_at=now - timedelta(days=1),
    )
    MemoryFactory(agent=peer.agent, category="semantic", namespace="ops", tags=["x"])

    def ids(**params):
        response = caller.client.get(URL, params)
        assert response.status_code == 200, response.json()
        return [m["id"] for m in response.json()["results"]]

    assert ids() == [str(c.id), str(b.id), str(a.id)]
    assert ids(category="semantic") == [str(c.id), str(a.id)]
    assert ids(namespace="ops") == [str(b.id), str(a.id)]
    assert ids(tag="x") == [str(b.id), str(a.id)]
    assert ids(tag="X,y") == [str(a.id)]
    assert ids(created_after=iso(now - timedelta(days=2, hours=1))) == [str(c.id), str(b.id)]
    assert ids(created_before=iso(now - timedelta(days=2, hours=1))) == [str(a.id)]
    page = caller.client.get(URL, {"page_size": 2}).json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert caller.client.get(URL, {"page_size": 2, "page": 2}).json()["results"][0]["id"] == str(
        a.id
    )
    first = caller.client.get(URL).json()["results"][0]
    assert first == expected(c)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"category": "gossip"}, "category"),
        ({"created_after": "yesterday"}, "created_after"),
        ({"level": "forever"}, "level"),
        ({"include_superseded": "maybe"}, "include_superseded"),
    ],
)
def test_list_rejects_bad_filters(caller, params, field):
    response = caller.client.get(URL, params)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["errors"][0]["field"] == field


def test_list_query_count_does_not_grow(caller, django_assert_max_num_queries):
    MemoryFactory(agent=caller.agent)
    with django_assert_max_num_queries(8) as few:
        caller.client.get(URL)
    MemoryFactory.create_batch(10, agent=caller.agent)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(caller.client.get(URL).json()["results"]) == 11


def test_list_superseded_only_on_request(caller):
    old = MemoryFactory(agent=caller.agent)
    new = MemoryFactory(agent=caller.agent)
    Memory.objects.filter(pk=old.pk).update(superseded_at=timezone.now(), superseded_by=new)
    assert [m["id"] for m in caller.client.get(URL).json()["results"]] == [str(new.id)]
    listed = caller.client.get(URL, {"include_superseded": "true"}).json()["results"]
    assert {m["id"] for m in listed} == {str(old.id), str(new.id)}


# --- PATCH ----------------------------------------------------------------------------------


def test_patch_content_reembeds(caller):
    memory = store(caller, "The cache TTL is five minutes.")
    before = np.array(memory.embedding)
    response = caller.client.patch(
        f"{URL}/{memory.id}",
        {"content": "The cache TTL is one hour.", "tags": ["Cache", "cache"], "confidence": 0.5},
        format="json",
    )
    assert response.status_code == 200
    memory.refresh_from_db()
    assert response.json() == expected(memory)
    assert memory.content == "The cache TTL is one hour." and memory.tags == ["cache"]
    assert memory.embedding_status == "ready"
    assert not np.allclose(before, np.array(memory.embedding))


def test_patch_metadata_keeps_the_embedding(caller, remote_embedder):
    memory = store(caller, "Deploys need two approvals.")
    calls = len(remote_embedder.requests_to(remote_embedder.EMBEDDINGS))
    expires = timezone.now() + timedelta(days=1)
    response = caller.client.patch(
        f"{URL}/{memory.id}", {"namespace": "policy", "expires_at": iso(expires)}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["namespace"] == "policy"
    assert len(remote_embedder.requests_to(remote_embedder.EMBEDDINGS)) == calls
    cleared = caller.client.patch(f"{URL}/{memory.id}", {"expires_at": None}, format="json")
    assert cleared.json()["expires_at"] is None


def test_patch_with_failing_embedder_marks_pending(caller, failing_embedder):
    memory = MemoryFactory(
        agent=caller.agent, embedding=[0.1] * 384, embedder_id="old", embedding_status="ready"
    )
    response = caller.client.patch(f"{URL}/{memory.id}", {"content": "Changed."}, format="json")
    assert response.status_code == 200
    memory.refresh_from_db()
    assert (memory.embedding, memory.embedder_id, memory.embedding_status) == (None, "", "pending")


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({}, 400, "empty_update", None),
        ({"content": "  "}, 400, "validation_error", "content"),
        ({"category": "gossip"}, 400, "validation_error", "category"),
        ({"confidence": 2}, 400, "validation_error", "confidence"),
        ({"session_id": "s"}, 400, "validation_error", "session_id"),
        ({"tags": [""]}, 400, "validation_error", "tags"),
        ({"expires_at": "2000-01-01T00:00:00Z"}, 400, "expires_in_past", "expires_at"),
    ],
)
def test_patch_rejects_invalid_input(caller, body, status, code, field):
    memory = MemoryFactory(agent=caller.agent, content="Original.")
    response = caller.client.patch(f"{URL}/{memory.id}", body, format="json")
    assert response.status_code == status, response.json()
    assert response.json()["code"] == code
    if field:
        assert field in [e["field"] for e in response.json()["errors"]]
    memory.refresh_from_db()
    assert memory.content == "Original." and memory.updated_at == memory.created_at


def test_patch_superseded_is_a_conflict(caller):
    old = MemoryFactory(agent=caller.agent, content="Old.")
    new = MemoryFactory(agent=caller.agent)
    Memory.objects.filter(pk=old.pk).update(superseded_at=timezone.now(), superseded_by=new)
    response = caller.client.patch(f"{URL}/{old.id}", {"content": "New."}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "memory_superseded"
    assert Memory.objects.get(pk=old.pk).content == "Old."


# --- DELETE ---------------------------------------------------------------------------------


def test_delete_writes_an_audit_entry(caller):
    memory = MemoryFactory(agent=caller.agent, namespace="ops", category="procedural")
    response = caller.client.delete(f"{URL}/{memory.id}")
    assert response.status_code == 204
    assert not Memory.objects.filter(pk=memory.pk).exists()
    entry = AuditEntry.objects.get(action_type="memory.deleted")
    assert (entry.company_id, entry.actor_agent_id, entry.target_type, entry.target_id) == (
        caller.company.pk,
        caller.agent.pk,
        "memory",
        str(memory.pk),
    )
    assert entry.details == {
        "agent_id": caller.agent.pk,
        "namespace": "ops",
        "category": "procedural",
        "level": "persistent",
        "is_shared": False,
    }
    assert caller.client.delete(f"{URL}/{memory.id}").status_code == 404


# --- count ----------------------------------------------------------------------------------


def test_count(caller, peer, outsider):
    MemoryFactory.create_batch(2, agent=caller.agent, category="semantic")
    MemoryFactory(agent=caller.agent, category="social")
    MemoryFactory(agent=peer.agent, category="semantic")
    MemoryFactory(agent=outsider.agent, category="semantic")
    assert caller.client.get(f"{URL}/count").json() == {"count": 3, "category": None}
    assert caller.client.get(f"{URL}/count", {"category": "semantic"}).json() == {
        "count": 2,
        "category": "semantic",
    }
    bad = caller.client.get(f"{URL}/count", {"category": "gossip"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "category"
    bad = caller.client.get(f"{URL}/count", {"kind": "x"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "kind"
