"""A lesson archived by any step — the per-agent caps, retention, expiry, pruning — comes
back whole: its counters, scope, tiers, advice and method (issue 34 item 7).

Before, only pruning kept them; a lesson archived by the cap or by retention came back as a
bare procedural memory with ``application_count`` 0 and no lesson."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from memory.ingestion.services.growth import memories_trim_to_cap
from memory.procedural.models import ProceduralLesson
from memory.procedural.services.pruning import procedural_prune_agent
from tests.memory.core.maintenance.conftest import configure
from tests.memory.factories import MemoryFactory
from tests.memory.procedural.conftest import PROPOSAL, set_procedural
from tests.memory.procedural.test_pruning import aged, lesson_of

pytestmark = pytest.mark.django_db

ADVICE = {
    "situation": {"task_type": "deploy"},
    "directives": [{"verb": "raise", "object": "timeout"}],
}
# applied, but longer ago than pruning's default ttl of 90 days
APPLIED_AT = timezone.now().replace(microsecond=0) - timedelta(days=95)


def _cap(agent):
    configure(agent.company, archival={"enabled": False}, max_memories_per_agent=1)
    return run_maintenance(agent=agent).counts["enforced_archived"]


def _growth_cap(agent):
    configure(agent.company, archival={"enabled": False}, max_memories_per_agent=1)
    return memories_trim_to_cap(agent=agent)


def _retention(agent):
    configure(
        agent.company,
        archival={"enabled": False},
        retention={"rules": [{"category": "procedural", "retention_days": 30}]},
    )
    return run_maintenance(agent=agent).counts["retention_archived"]


def _expiry(agent):
    Memory.objects.filter(agent=agent, category="procedural").update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    configure(agent.company, archival={"enabled": False})
    return run_maintenance(agent=agent).counts["expired_archived"]


def _pruning(agent):
    set_procedural(agent.company, pruning="ttl")
    return procedural_prune_agent(agent=agent).ttl


@pytest.mark.parametrize(
    "archive_step",
    [_cap, _growth_cap, _retention, _expiry, _pruning],
    ids=["cap", "growth_cap", "retention", "expiry", "pruning"],
)
def test_an_archived_lesson_comes_back_with_its_counters(caller, llm_server, archive_step):
    memory = aged(lesson_of(caller), 100)
    Memory.objects.filter(pk=memory.pk).update(
        application_count=7, last_applied_at=APPLIED_AT, scope="agent"
    )
    ProceduralLesson.objects.filter(memory=memory).update(advice=ADVICE, method="rule")
    lesson = ProceduralLesson.objects.get(memory=memory)
    # a newer non-procedural memory, so the caps of 1 take the lesson (the oldest)
    MemoryFactory(agent=caller.agent, company=caller.company, category="semantic")

    assert archive_step(caller.agent) == 1
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not ProceduralLesson.objects.exists()
    archived = ArchivedMemory.objects.get(original_id=memory.pk)
    kept = archived.metadata["procedural"]
    assert (kept["application_count"], kept["scope"]) == (7, "agent")
    assert (kept["lesson"]["advice"], kept["lesson"]["method"]) == (ADVICE, "rule")

    response = caller.client.post(f"/api/v1/archive/{archived.pk}/restore")

    assert response.status_code == 200, response.json()
    restored = Memory.objects.get(pk=response.json()["memory_id"])
    assert (
        restored.category,
        restored.scope,
        restored.application_count,
        restored.last_applied_at,
    ) == ("procedural", "agent", 7, APPLIED_AT)
    back = ProceduralLesson.objects.get(memory=restored)
    assert {
        field: getattr(back, field)
        for field in (
            "report_id",
            "origin",
            "skill_name",
            "discovery",
            "condition",
            "action",
            "rationale",
            "execution_steps",
            "advice",
            "method",
            "proposer_model",
            "requested_scope",
            "created_at",
        )
    } == {
        "report_id": lesson.report_id,
        "origin": lesson.origin,
        "skill_name": lesson.skill_name,
        "discovery": PROPOSAL["discovery"],
        "condition": PROPOSAL["condition"],
        "action": PROPOSAL["action"],
        "rationale": lesson.rationale,
        "execution_steps": PROPOSAL["execution_steps"],
        "advice": ADVICE,
        "method": "rule",
        "proposer_model": lesson.proposer_model,
        "requested_scope": lesson.requested_scope,
        "created_at": lesson.created_at,
    }


def test_a_row_archived_before_advice_and_method_were_kept_restores_with_the_defaults(
    caller, llm_server
):
    memory = aged(lesson_of(caller), 100)
    _pruning(caller.agent)
    archived = ArchivedMemory.objects.get(original_id=memory.pk)
    for name in ("advice", "method"):
        del archived.metadata["procedural"]["lesson"][name]
    archived.save(update_fields=["metadata"])

    response = caller.client.post(f"/api/v1/archive/{archived.pk}/restore")

    assert response.status_code == 200, response.json()
    back = ProceduralLesson.objects.get(memory_id=response.json()["memory_id"])
    assert (back.advice, back.method, back.condition) == ({}, "llm", PROPOSAL["condition"])


def test_memories_of_other_categories_keep_no_procedural_metadata(caller):
    configure(caller.company, archival={"enabled": False}, max_memories_per_agent=1)
    old = MemoryFactory(agent=caller.agent, company=caller.company, category="episodic")
    aged(old, 10)
    MemoryFactory(agent=caller.agent, company=caller.company, category="semantic")

    assert run_maintenance(agent=caller.agent).counts["enforced_archived"] == 1

    assert "procedural" not in ArchivedMemory.objects.get(original_id=old.pk).metadata
