"""The seed's repository queries, as selectors, each scoped to one company."""

import pytest

from persistence.models import AgentRuntimeState, AuditEntry
from persistence.selectors import operations as ops
from persistence.selectors.costs import cost_records_list, cost_total, cost_totals
from persistence.services.audit import audit_record
from tests.persistence.factories import (
    AgentFactory,
    ArtifactFactory,
    CompanyFactory,
    CostRecordFactory,
    MessageFactory,
    ParkedContextFactory,
    ProjectFactory,
    TaskFactory,
    at,
)


@pytest.fixture
def world(db):
    company = CompanyFactory()
    other = CompanyFactory()
    a1, a2 = AgentFactory(company=company), AgentFactory(company=company)
    stranger = AgentFactory(company=other)
    return company, other, a1, a2, stranger


def test_tasks_by_status_assignee_project(world):
    company, other, a1, a2, _ = world
    project = ProjectFactory(company=company)
    t1 = TaskFactory(company=company, status="in_progress", assignee=a1, created_at=at(1))
    t2 = TaskFactory(
        company=company, status="completed", assignee=a1, project=project, created_at=at(2)
    )
    t3 = TaskFactory(
        company=company, status="in_progress", assignee=a2, project=project, created_at=at(3)
    )
    TaskFactory(company=other, status="in_progress")
    assert list(ops.tasks_list(company)) == [t3, t2, t1]
    assert list(ops.tasks_list(company, status="in_progress")) == [t3, t1]
    assert list(ops.tasks_list(company, assignee=a1)) == [t2, t1]
    assert list(ops.tasks_list(company, project=project)) == [t3, t2]
    assert list(ops.tasks_list(company, status="in_progress", assignee=a2)) == [t3]


def test_costs_by_agent_and_task_with_sums(world):
    company, other, a1, a2, stranger = world
    task = TaskFactory(company=company)
    c1 = CostRecordFactory(company=company, agent=a1, task=task, cost="0.10", occurred_at=at(1))
    c2 = CostRecordFactory(company=company, agent=a1, cost="0.20", occurred_at=at(2))
    c3 = CostRecordFactory(company=company, agent=a2, task=task, cost="1.5", occurred_at=at(3))
    CostRecordFactory(company=other, agent=stranger, cost="99")
    assert list(cost_records_list(company, agent=a1)) == [c2, c1]
    assert list(cost_records_list(company, task=task)) == [c3, c1]
    assert list(cost_records_list(company, since=at(2), until=at(3))) == [c2]
    assert str(cost_total(company, agent=a1)) == "0.3000000000"
    assert str(cost_total(company)) == "1.8000000000"
    assert cost_totals(company, agent=stranger) == ()


def test_messages_by_channel_with_limit(world):
    company, other, *_ = world
    msgs = [MessageFactory(company=company, channel="ops", created_at=at(d)) for d in (1, 2, 3)]
    MessageFactory(company=company, channel="random", created_at=at(4))
    MessageFactory(company=other, channel="ops", created_at=at(5))
    assert ops.message_history(company, "ops") == msgs
    assert ops.message_history(company, "ops", limit=2) == msgs[1:]
    assert ops.message_history(company, "nobody") == []


def _audit(company, day, **fields):
    return AuditEntry.objects.create(company=company, created_at=at(day), **fields)


def test_audit_by_agent_action_verdict_risk_and_time(world):
    company, other, a1, a2, _ = world
    e1 = _audit(company, 1, actor_agent=a1, action_type="key.issued")
    e2 = _audit(
        company, 2, actor_agent=a2, action_type="fact.write", verdict="denied", risk_level="high"
    )
    e3 = _audit(company, 3, actor_agent=a1, action_type="fact.write", risk_level="critical")
    _audit(other, 2, action_type="fact.write", verdict="denied")
    assert list(ops.audit_entries_list(company)) == [e3, e2, e1]
    assert list(ops.audit_entries_list(company, agent=a1)) == [e3, e1]
    assert list(ops.audit_entries_list(company, action_type="fact.write")) == [e3, e2]
    assert list(ops.audit_entries_list(company, verdict="denied")) == [e2]
    assert list(ops.audit_entries_list(company, risk_level="critical")) == [e3]
    assert list(ops.audit_entries_list(company, since=at(2), until=at(3))) == [e2]
    assert list(ops.audit_entries_list(company, agent=a1, since=at(2))) == [e3]


def test_audit_record_writes_the_actor(world):
    company, _, a1, _, _ = world
    entry = audit_record(
        company=company,
        actor_agent=a1,
        action_type="memory.deleted",
        target_type="memory",
        target_id=7,
        risk_level="medium",
    )
    assert (entry.actor_agent, entry.target_id, entry.verdict) == (a1, "7", "allowed")


def test_parked_contexts_by_execution_agent_task(world):
    company, other, a1, a2, _ = world
    task = TaskFactory(company=company)
    p1 = ParkedContextFactory(company=company, agent=a1, execution_id="x1", created_at=at(1))
    p2 = ParkedContextFactory(
        company=company, agent=a2, task=task, execution_id="x2", created_at=at(2)
    )
    p3 = ParkedContextFactory(
        company=company, agent=a1, task=task, execution_id="x1", created_at=at(3)
    )
    ParkedContextFactory(company=other, agent=AgentFactory(company=other), execution_id="x1")
    assert list(ops.parked_contexts_list(company, execution_id="x1")) == [p3, p1]
    assert list(ops.parked_contexts_list(company, agent=a2)) == [p2]
    assert list(ops.parked_contexts_list(company, task=task)) == [p3, p2]


def test_runtime_states_active_agents(world):
    from django.utils import timezone

    company, other, a1, a2, stranger = world
    s1 = AgentRuntimeState.objects.create(
        company=company, agent=a1, status="active", updated_at=timezone.now()
    )
    AgentRuntimeState.objects.create(
        company=company, agent=a2, status="idle", updated_at=timezone.now()
    )
    AgentRuntimeState.objects.create(
        company=other, agent=stranger, status="active", updated_at=timezone.now()
    )
    assert list(ops.runtime_states_list(company, active_only=True)) == [s1]
    assert ops.runtime_states_list(company).count() == 2
    assert ops.runtime_state_for_agent(company, a1) == s1
    assert ops.runtime_state_for_agent(company, stranger) is None


def test_artifacts_by_task_creator_type(world):
    company, other, a1, a2, _ = world
    task = TaskFactory(company=company)
    r1 = ArtifactFactory(
        company=company, task=task, created_by=a1, artifact_type="code", created_at=at(1)
    )
    r2 = ArtifactFactory(company=company, created_by=a2, artifact_type="report", created_at=at(2))
    r3 = ArtifactFactory(
        company=company, task=task, created_by=a2, artifact_type="code", created_at=at(3)
    )
    ArtifactFactory(company=other, artifact_type="code")
    assert list(ops.artifacts_list(company, task=task)) == [r3, r1]
    assert list(ops.artifacts_list(company, created_by=a2)) == [r3, r2]
    assert list(ops.artifacts_list(company, artifact_type="code")) == [r3, r1]


def test_projects_by_status_and_lead(world):
    company, other, a1, a2, _ = world
    p1 = ProjectFactory(company=company, name="alpha", status="active", lead=a1)
    p2 = ProjectFactory(company=company, name="beta", status="planning", lead=a1)
    p3 = ProjectFactory(company=company, name="gamma", status="active", lead=a2)
    ProjectFactory(company=other, name="alpha", status="active")
    assert list(ops.projects_list(company, status="active")) == [p1, p3]
    assert list(ops.projects_list(company, lead=a1)) == [p1, p2]


def test_settings_by_namespace_and_key(world):
    from django.utils import timezone

    from persistence.models import Setting

    company, other, *_ = world
    now = timezone.now()
    s1 = Setting.objects.create(
        company=company,
        namespace="budget",
        key="monthly_limit",
        value={"amount": "5"},
        created_at=now,
        updated_at=now,
    )
    s2 = Setting.objects.create(
        company=company, namespace="ui", key="theme", value="dark", created_at=now, updated_at=now
    )
    Setting.objects.create(
        company=other,
        namespace="budget",
        key="monthly_limit",
        value={"amount": "9"},
        created_at=now,
        updated_at=now,
    )
    assert ops.setting_get(company, "budget", "monthly_limit") == s1
    assert ops.setting_get(company, "budget", "nope") is None
    assert list(ops.settings_list(company, namespace="ui")) == [s2]
    assert list(ops.settings_list(company)) == [s1, s2]


def test_presets_by_name(world):
    from django.utils import timezone

    from persistence.models import PersonalityPreset

    company, other, *_ = world
    now = timezone.now()
    mine = PersonalityPreset.objects.create(
        company=company, name="terse", created_at=now, updated_at=now
    )
    PersonalityPreset.objects.create(company=other, name="chatty", created_at=now, updated_at=now)
    assert ops.preset_by_name(company, "terse") == mine
    assert ops.preset_by_name(company, "chatty") is None
