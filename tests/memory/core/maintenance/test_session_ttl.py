"""Issue 33: session-level memories (the default level) expire after
``memory.options.session_ttl_hours`` even when the agent never ends its session, and are then
archived like any removal (restorable by original id)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from pydantic import ValidationError

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.selectors.memories import agent_memories
from memory.core.services.maintenance import run_maintenance
from persistence.services.companies import company_config_set
from synthorg.company_config.memory import MemoryOptionsConfig
from tests.conftest import make_agent_caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"


def store(caller, content, **fields):
    body = {"content": content, "category": "episodic", "session_id": "run-1", **fields}
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return Memory.objects.get(pk=response.json()["id"])


def test_default_config_expires_session_memories_after_24_hours_and_archives_them(company):
    session = make_agent_caller(company=company, memory_level="session")
    persistent = make_agent_caller(company=company, memory_level="persistent")
    before = timezone.now()
    memory = store(session, "The staging database was restarted at noon.")
    kept = store(persistent, "The staging database runs PostgreSQL 16.")
    after = timezone.now()

    # Bound at write time: 24 hours (the default) after the write; persistent memories never.
    assert before + timedelta(hours=24) <= memory.expires_at <= after + timedelta(hours=24)
    assert kept.expires_at is None

    # Still live (and readable) within the TTL: maintenance leaves it alone.
    within = memory.expires_at - timedelta(minutes=1)
    assert list(agent_memories(agent=session.agent, now=within)) == [memory]
    report = run_maintenance(agent=session.agent, now=within)
    assert report.counts["expired_archived"] == 0
    assert Memory.objects.filter(pk=memory.pk).exists()

    # The session was never ended; past the TTL it is hidden and maintenance archives it.
    past = memory.expires_at + timedelta(minutes=1)
    assert list(agent_memories(agent=session.agent, now=past)) == []
    report = run_maintenance(agent=session.agent, now=past)
    assert report.status == "succeeded", report.errors
    assert report.counts["expired_archived"] == 1
    assert not Memory.objects.filter(pk=memory.pk).exists()
    archived = ArchivedMemory.objects.get(original_id=memory.pk)
    assert (archived.agent_id, archived.mode, archived.content) == (
        session.agent.pk,
        "expired",
        "The staging database was restarted at noon.",
    )
    assert archived.metadata["level"] == "session"
    # the persistent agent's memory is untouched by the same clock
    assert run_maintenance(agent=persistent.agent, now=past).counts["expired_archived"] == 0
    assert Memory.objects.filter(pk=kept.pk).exists()


def test_session_ttl_hours_sets_the_expiry_and_bounds_the_callers_own(company):
    company_config_set(company=company, data={"memory": {"options": {"session_ttl_hours": 2}}})
    session = make_agent_caller(company=company, memory_level="session")
    before = timezone.now()
    plain = store(session, "Ana asked for the release notes.")
    later = store(
        session,
        "The build cache lives in /tmp/cache.",
        expires_at=(before + timedelta(days=30)).isoformat(),
    )
    sooner_at = before + timedelta(minutes=30)
    sooner = store(session, "The demo starts in half an hour.", expires_at=sooner_at.isoformat())
    after = timezone.now()

    for row in (plain, later):
        assert before + timedelta(hours=2) <= row.expires_at <= after + timedelta(hours=2)
    assert sooner.expires_at == sooner_at  # a sooner expiry of the caller's own stays

    # An update cannot lift the TTL: `expires_at: null` is bounded again from the update.
    response = session.client.patch(f"{URL}/{plain.pk}", {"expires_at": None}, format="json")
    assert response.status_code == 200, response.json()
    plain.refresh_from_db()
    assert plain.expires_at is not None
    assert plain.expires_at <= timezone.now() + timedelta(hours=2)

    report = run_maintenance(agent=session.agent, now=after + timedelta(hours=3))
    assert report.counts["expired_archived"] == 3
    assert not Memory.objects.filter(agent=session.agent).exists()
    assert set(
        ArchivedMemory.objects.filter(agent=session.agent).values_list("original_id", flat=True)
    ) == {plain.pk, later.pk, sooner.pk}


@pytest.mark.parametrize("hours", [0, -1, 24 * 365 + 1])
def test_session_ttl_hours_out_of_range_is_refused(hours):
    with pytest.raises(ValidationError):
        MemoryOptionsConfig(session_ttl_hours=hours)
