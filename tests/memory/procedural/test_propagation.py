"""Cross-agent propagation: a lesson's scope, bounded by the company strategy, names its
recipients (role / department peers, the cap, every exclusion, narrowing)."""

from __future__ import annotations

import json

import pytest

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture, ProceduralLesson
from memory.procedural.propagation import (
    Peer,
    ScopeDecision,
    propagation_targets,
    scope_decision,
)
from memory.procedural.tasks import capture_execution_report
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL, set_procedural
from tests.persistence.factories import AgentFactory, CompanyFactory
from tests.support.openai_server import FakeOpenAIServer


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


def test_scope_decision_table():
    """The strategy bounds the scope; it never widens it; org goes to humans."""
    expected = {
        # (requested, strategy): (effective, narrowed, org_proposal)
        ("agent", "none"): ("agent", False, False),
        ("agent", "role"): ("agent", False, False),
        ("agent", "department"): ("agent", False, False),
        ("role", "none"): ("agent", True, False),
        ("role", "role"): ("role", False, False),
        ("role", "department"): ("role", False, False),
        ("department", "none"): ("agent", True, False),
        ("department", "role"): ("role", True, False),
        ("department", "department"): ("department", False, False),
        ("org", "none"): ("agent", False, True),
        ("org", "role"): ("role", False, True),
        ("org", "department"): ("department", False, True),
    }
    for (requested, strategy), (effective, narrowed, org) in expected.items():
        decision = scope_decision(requested, strategy)
        assert (decision.effective, decision.narrowed, decision.org_proposal) == (
            effective,
            narrowed,
            org,
        ), (requested, strategy)
    assert scope_decision("department", "role").note == (
        "scope department narrowed to role: the company's propagation strategy is role"
    )
    assert scope_decision("org", "none").note == (
        "scope org: proposed to the org skill pool; until approved it reaches its author only"
    )
    assert scope_decision("org", "role", org_pool=False) == ScopeDecision(
        requested="org",
        effective="role",
        narrowed=True,
        why="the company has no org skill pool (memory.options.shared_knowledge_base is off) "
        "and its propagation strategy is role",
    )
    assert scope_decision("agent", "role").note == ""
    with pytest.raises(ValueError):
        scope_decision("team", "role")
    with pytest.raises(ValueError):
        scope_decision("role", "org")


@pytest.fixture
def source(db):
    return make_agent_caller(company=CompanyFactory(), role="sre", department="ops")


@pytest.fixture
def proposer(settings):
    """Start a proposer answering :data:`PROPOSAL` with a given ``scope``."""
    servers = []

    def start(scope: str) -> None:
        server = FakeOpenAIServer(chat_reply=json.dumps({**PROPOSAL, "scope": scope}))
        server.__enter__()
        servers.append(server)
        settings.SYNTHORG_LLM = {
            "BASE_URL": server.base_url,
            "API_KEY": "test-key",
            "MODEL": "fake-chat",
            "MAX_RETRIES": 0,
            "TIMEOUT": 5,
        }

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def run(source, body=FAILED_REPORT) -> Memory:
    report_id = source.client.post("/api/v1/executions", body, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


def test_role_scope_reaches_same_role_peers_only(source, proposer):
    proposer("role")
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
        assert (copy.level, copy.scope, copy.is_shared) == ("persistent", "role", False)
        assert f"propagated:{source.agent.pk}" in copy.tags and "non-inferable" in copy.tags
        assert copy.lesson.origin == "propagated"
        assert copy.lesson.propagated_from_id == original.pk
        assert copy.lesson.condition == PROPOSAL["condition"]
        assert copy.lesson.requested_scope == "role"
    for excluded in (other_role, level_none, inactive, foreign):
        assert not Memory.objects.filter(agent=excluded).exists()
    assert f"propagated:{source.agent.pk}" not in original.tags
    assert (original.scope, original.lesson.requested_scope) == ("role", "role")
    assert original.lesson.report.capture.reason == ""


def test_department_scope_with_cap(source, proposer):
    proposer("department")
    company = source.company
    set_procedural(company, propagation={"strategy": "department", "max_propagation_targets": 2})
    peers = [AgentFactory(company=company, role=f"r{i}", department="ops") for i in range(4)]
    AgentFactory(company=company, role="sre", department="sales")
    run(source)
    receivers = set(Memory.objects.exclude(agent=source.agent).values_list("agent_id", flat=True))
    assert receivers == {peers[0].pk, peers[1].pk}  # the cap, lowest ids first
    assert ProceduralLesson.objects.filter(origin="propagated").count() == 2


def test_agent_scope_stays_private_whatever_the_strategy(source, proposer):
    """Before scopes were delivered, the company strategy alone decided: this lesson went to
    every same-role peer although its proposer said it was the agent's own."""
    proposer("agent")
    set_procedural(source.company, propagation="department")
    AgentFactory(company=source.company, role="sre", department="ops")
    original = run(source)
    assert Memory.objects.count() == 1
    assert (original.scope, original.lesson.requested_scope) == ("agent", "agent")


def test_department_scope_narrowed_to_role_by_the_strategy(source, proposer):
    proposer("department")
    company = source.company
    set_procedural(company, propagation="role")
    same_role_elsewhere = AgentFactory(company=company, role="sre", department="platform")
    same_department_other_role = AgentFactory(company=company, role="dev", department="ops")
    original = run(source)
    receivers = set(Memory.objects.exclude(agent=source.agent).values_list("agent_id", flat=True))
    assert receivers == {same_role_elsewhere.pk}
    assert not Memory.objects.filter(agent=same_department_other_role).exists()
    assert (original.scope, original.lesson.requested_scope) == ("role", "department")
    capture = original.lesson.report.capture
    assert capture.reason == (
        "scope department narrowed to role: the company's propagation strategy is role"
    )
    detail = source.client.get(f"/api/v1/memories/{original.pk}").json()
    assert detail["scope"] == "role"
    assert detail["procedural"]["requested_scope"] == "department"


def test_role_scope_without_propagation_stays_private_and_says_so(source, proposer):
    proposer("role")
    AgentFactory(company=source.company, role="sre", department="ops")
    original = run(source)
    assert Memory.objects.count() == 1
    assert original.scope == "agent"
    assert original.lesson.report.capture.reason == (
        "scope role narrowed to agent: the company's propagation strategy is none"
    )


def test_peer_that_already_has_the_lesson_gets_no_second_copy(source, proposer):
    proposer("role")
    set_procedural(source.company, propagation="role")
    receiver = AgentFactory(company=source.company, role="sre")
    run(source)
    second = source.client.post(
        "/api/v1/executions", {**FAILED_REPORT, "task_title": "again"}, format="json"
    ).json()["id"]
    capture_execution_report(second)  # deduplicated at the source: no new propagation
    assert Memory.objects.filter(agent=receiver).count() == 1
