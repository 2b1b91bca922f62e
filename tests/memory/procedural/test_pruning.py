"""Pruning through the archive: per agent, restorable with the lesson's tiers, scheduled."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture, ProceduralLesson
from memory.procedural.services.pruning import procedural_prune_agent
from memory.procedural.tasks import capture_execution_report, run_procedural_maintenance
from persistence.models import AuditEntry
from tests.memory.factories import MemoryFactory
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL, set_procedural

pytestmark = pytest.mark.django_db


def lesson_of(caller) -> Memory:
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


def aged(memory: Memory, days: int) -> Memory:
    old = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory.pk).update(created_at=old, updated_at=old)
    memory.refresh_from_db()
    return memory


def procedural(agent, days=1, confidence=0.5, **kw):
    return aged(
        MemoryFactory(
            agent=agent, company=agent.company, category="procedural", confidence=confidence, **kw
        ),
        days,
    )


def test_ttl_archives_and_restore_brings_the_lesson_back(caller, llm_server):
    set_procedural(caller.company, pruning="ttl")
    memory = aged(lesson_of(caller), 91)
    Memory.objects.filter(pk=memory.pk).update(application_count=3, scope="agent")
    lesson = memory.lesson
    fresh = procedural(caller.agent, days=89)

    result = procedural_prune_agent(agent=caller.agent)
    assert (result.ttl, result.pareto, result.kept) == (1, 0, 1)
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert Memory.objects.filter(pk=fresh.pk).exists()
    assert not ProceduralLesson.objects.exists()
    archived = ArchivedMemory.objects.get(original_id=memory.pk)
    assert (archived.mode, archived.metadata["pruned_by"]) == ("pruned", "ttl")
    assert archived.content == PROPOSAL["discovery"]
    assert AuditEntry.objects.filter(action_type="procedural_memory.pruned").count() == 1
    # the report keeps pointing at nothing rather than at a deleted row
    assert ExecutionCapture.objects.get(report_id=lesson.report_id).memory_id is None

    response = caller.client.post(f"/api/v1/archive/{archived.pk}/restore")
    assert response.status_code == 200, response.json()
    restored = Memory.objects.get(pk=response.json()["memory_id"])
    assert (restored.category, restored.scope, restored.application_count) == (
        "procedural",
        "agent",
        3,
    )
    tiers = caller.client.get(f"/api/v1/memories/{restored.pk}").json()["procedural"]
    assert tiers["condition"] == PROPOSAL["condition"]
    assert tiers["execution_steps"] == PROPOSAL["execution_steps"]
    assert tiers["source_report_id"] == str(lesson.report_id)


def test_pareto_caps_each_agent_separately(caller, peer):
    set_procedural(caller.company, pruning={"strategy": "pareto", "max_entries": 2})
    mine = [procedural(caller.agent, days=d, confidence=0.1 * d) for d in range(1, 6)]
    theirs = [procedural(peer.agent, days=d) for d in (1, 2)]
    semantic = MemoryFactory(agent=caller.agent, company=caller.company, category="semantic")
    shared = MemoryFactory(
        agent=caller.agent, company=caller.company, category="procedural", is_shared=True
    )
    assert procedural_prune_agent(agent=caller.agent).pareto == 3
    assert procedural_prune_agent(agent=peer.agent).pruned == 0
    left = set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True))
    assert left == {mine[0].pk, mine[1].pk, semantic.pk, shared.pk}  # the two newest kept
    assert Memory.objects.filter(agent=peer.agent).count() == len(theirs)
    assert set(ArchivedMemory.objects.values_list("metadata__pruned_by", flat=True)) == {"pareto"}


def test_hybrid_and_dry_run(caller):
    set_procedural(caller.company, pruning={"strategy": "hybrid", "max_entries": 1})
    procedural(caller.agent, days=120)
    procedural(caller.agent, days=2)
    procedural(caller.agent, days=1)
    preview = procedural_prune_agent(agent=caller.agent, dry_run=True)
    assert (preview.ttl, preview.pareto, preview.kept) == (1, 1, 1)
    assert Memory.objects.count() == 3 and not ArchivedMemory.objects.exists()
    assert procedural_prune_agent(agent=caller.agent).pruned == 2
    assert Memory.objects.count() == 1


def test_strategy_none_prunes_nothing(caller):
    set_procedural(caller.company, pruning="none")
    procedural(caller.agent, days=1000)
    assert procedural_prune_agent(agent=caller.agent).pruned == 0
    assert Memory.objects.count() == 1


def test_scheduled_task_and_command(caller, outsider):
    set_procedural(caller.company, pruning="ttl")
    procedural(caller.agent, days=100)
    procedural(outsider.agent, days=100)  # another company: default hybrid, also 90 days
    assert run_procedural_maintenance(caller.company.pk) == {
        "agents": 1,
        "pruned": 1,
    }
    assert Memory.objects.filter(agent=outsider.agent).count() == 1
    out = io.StringIO()
    call_command("run_maintenance", "--company", outsider.company.slug, stdout=out)
    assert "procedural pruning archived 1 (ttl 1, pareto 0), kept 0" in out.getvalue()
    assert not Memory.objects.exists()
    assert run_procedural_maintenance(999_999) is None


def test_schedules_are_declared_per_company(caller, outsider):
    from memory.procedural.schedules import procedural_schedules, schedule_name

    set_procedural(outsider.company, enabled=False, pruning="none")
    names = {spec.name for spec in procedural_schedules()}
    assert schedule_name(caller.company.pk) in names
    assert schedule_name(outsider.company.pk) not in names
