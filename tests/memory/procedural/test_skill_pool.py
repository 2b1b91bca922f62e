"""POST /memories/{id}/applied: the skill pool counters."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from persistence.models import AuditEntry
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def applied(caller, memory_id, **kw):
    return caller.client.post(f"/api/v1/memories/{memory_id}/applied", format="json", **kw)


def test_applied_increments(caller):
    memory = MemoryFactory(agent=caller.agent, company=caller.company, category="procedural")
    first = applied(caller, memory.pk)
    assert first.status_code == 200
    assert first.json()["application_count"] == 1
    second = applied(caller, memory.pk).json()
    assert second["id"] == str(memory.pk) and second["application_count"] == 2
    memory.refresh_from_db()
    assert memory.application_count == 2
    assert memory.last_applied_at is not None and memory.last_applied_at <= timezone.now()
    assert AuditEntry.objects.filter(action_type="procedural_memory.applied").count() == 2


def test_shared_lesson_can_be_applied(caller, peer):
    shared = MemoryFactory(
        agent=peer.agent, company=peer.company, category="procedural", is_shared=True
    )
    assert applied(caller, shared.pk).json()["application_count"] == 1


def test_rejections_change_nothing(caller, peer, outsider):
    other = MemoryFactory(agent=peer.agent, company=peer.company, category="procedural")
    foreign = MemoryFactory(agent=outsider.agent, company=outsider.company, category="procedural")
    semantic = MemoryFactory(agent=caller.agent, company=caller.company, category="semantic")
    replacement = MemoryFactory(agent=caller.agent, company=caller.company, category="procedural")
    old = MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        category="procedural",
        superseded_at=timezone.now(),
        superseded_by=replacement,
    )
    assert applied(caller, other.pk).status_code == 404
    assert applied(caller, foreign.pk).status_code == 404
    response = applied(caller, semantic.pk)
    assert (response.status_code, response.json()["code"]) == (422, "not_procedural")
    response = applied(caller, old.pk)
    assert (response.status_code, response.json()["code"]) == (409, "memory_superseded")
    response = caller.client.post(
        f"/api/v1/memories/{replacement.pk}/applied", {"x": 1}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "field": "x",
        "message": "This endpoint takes no request body.",
        "code": "unknown_field",
    }
    assert set(Memory.objects.values_list("application_count", flat=True)) == {0}
    assert not AuditEntry.objects.filter(action_type="procedural_memory.applied").exists()


def test_humans_cannot_apply(caller, human_client):
    memory = MemoryFactory(agent=caller.agent, company=caller.company, category="procedural")
    assert human_client.post(f"/api/v1/memories/{memory.pk}/applied").status_code == 403
