"""Cross-agent propagation: role / department peers, the cap, and every exclusion."""

from __future__ import annotations

import pytest

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture, ProceduralLesson
from memory.procedural.propagation import Peer, propagation_targets
from memory.procedural.tasks import capture_execution_report
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL, set_procedural
from tests.persistence.factories import AgentFactory, CompanyFactory


def peer(i, role="sre", department="ops", level="persistent", active=True):
    return Peer(id=i, role=role, department=department, memory_level=level, is_active=active)


def test_pure_targets():
    source = peer(5)
    candidates = [
        peer(5),  # the source itself
        peer(9),
        peer(2),
        peer(3, role="dev"),
        peer(4, level="none"),
        peer(6, active=False),
        peer(7, department="sales"),
    ]
    assert [
        p.id
        for p in propagation_targets("role", source=source, candidates=candidates, max_targets=10)
    ] == [2, 7, 9]
    assert [
        p.id
        for p in propagation_targets(
            "department", source=source, candidates=candidates, max_targets=10
        )
    ] == [2, 3, 9]
    assert [
        p.id
        for p in propagation_targets("role", source=source, candidates=candidates, max_targets=2)
    ] == [2, 7]
    assert propagation_targets("none", source=source, candidates=candidates, max_targets=10) == []
    assert (
        propagation_targets("role", source=peer(1, role=" "), candidates=candidates, max_targets=10)
        == []
    )
    assert propagation_targets("role", source=source, candidates=candidates, max_targets=0) == []


@pytest.fixture
def source(db):
    return make_agent_caller(company=CompanyFactory(), role="sre", department="ops")


def run(source) -> Memory:
    report_id = source.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


@pytest.mark.django_db
def test_role_propagation(source, llm_server):
    company = source.company
    set_procedural(company, propagation="role")
    same_role = AgentFactory(company=company, role="sre", department="platform")
    other_role = AgentFactory(company=company, role="dev", department="ops")
    level_none = AgentFactory(company=company, role="sre", memory_level="none")
    inactive = AgentFactory(company=company, role="sre", is_active=False)
    session_level = AgentFactory(company=company, role="sre", memory_level="session")
    foreign = AgentFactory(company=CompanyFactory(), role="sre")

    original = run(source)
    copies = Memory.objects.exclude(pk=original.pk)
    assert {m.agent_id for m in copies} == {same_role.pk, session_level.pk}
    for copy in copies:
        assert copy.category == "procedural" and copy.content == PROPOSAL["discovery"]
        assert copy.level == "persistent"
        assert f"propagated:{source.agent.pk}" in copy.tags and "non-inferable" in copy.tags
        assert copy.lesson.origin == "propagated"
        assert copy.lesson.propagated_from_id == original.pk
        assert copy.lesson.condition == PROPOSAL["condition"]
    for excluded in (other_role, level_none, inactive, foreign):
        assert not Memory.objects.filter(agent=excluded).exists()
    assert f"propagated:{source.agent.pk}" not in original.tags


@pytest.mark.django_db
def test_department_propagation_with_cap(source, llm_server):
    company = source.company
    set_procedural(company, propagation={"strategy": "department", "max_propagation_targets": 2})
    peers = [AgentFactory(company=company, role=f"r{i}", department="ops") for i in range(4)]
    AgentFactory(company=company, role="sre", department="sales")
    run(source)
    receivers = set(Memory.objects.exclude(agent=source.agent).values_list("agent_id", flat=True))
    assert receivers == {peers[0].pk, peers[1].pk}  # the cap, lowest ids first
    assert ProceduralLesson.objects.filter(origin="propagated").count() == 2


@pytest.mark.django_db
def test_no_propagation_by_default(source, llm_server):
    AgentFactory(company=source.company, role="sre", department="ops")
    run(source)
    assert Memory.objects.count() == 1


@pytest.mark.django_db
def test_peer_that_already_has_the_lesson_gets_no_second_copy(source, llm_server):
    set_procedural(source.company, propagation="role")
    receiver = AgentFactory(company=source.company, role="sre")
    run(source)
    second = source.client.post(
        "/api/v1/executions", {**FAILED_REPORT, "task_title": "again"}, format="json"
    ).json()["id"]
    capture_execution_report(second)  # deduplicated at the source: no new propagation
    assert Memory.objects.filter(agent=receiver).count() == 1
