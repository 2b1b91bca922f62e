"""Company A's principals cannot see or change anything of company B through any endpoint."""

import pytest
from django.utils import timezone

from persistence.models import (
    AgentRuntimeState,
    AuditEntry,
    Checkpoint,
    CollaborationMetric,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    PersonalityPreset,
    Setting,
    TaskMetric,
)
from tests.persistence.factories import (
    AgentFactory,
    ArtifactFactory,
    CostRecordFactory,
    MessageFactory,
    ParkedContextFactory,
    ProjectFactory,
    TaskFactory,
)

pytestmark = pytest.mark.django_db

MUTABLE = {"tasks", "artifacts", "projects", "personality-presets", "parked-contexts"}
DELETABLE = MUTABLE | {"checkpoints"}


@pytest.fixture
def theirs(outsider):
    """One object of every kind in the outsider's company."""
    company, agent = outsider.company, outsider.agent
    now = timezone.now()
    task = TaskFactory(company=company, assignee=agent)
    peer = AgentFactory(company=company)
    return {
        "tasks": task,
        "costs": CostRecordFactory(company=company, agent=agent, task=task),
        "messages": MessageFactory(company=company, sender_agent=agent),
        "audit": AuditEntry.objects.create(
            company=company, actor_agent=agent, action_type="x", created_at=now
        ),
        "parked-contexts": ParkedContextFactory(company=company, agent=agent, task=task),
        "heartbeats": Heartbeat.objects.create(company=company, agent=agent, created_at=now),
        "lifecycle-events": LifecycleEvent.objects.create(
            company=company, agent=agent, event_type="started", created_at=now
        ),
        "checkpoints": Checkpoint.objects.create(
            company=company, agent=agent, execution_id="e", created_at=now
        ),
        "task-metrics": TaskMetric.objects.create(
            company=company, agent=agent, task=task, success=True, created_at=now
        ),
        "collaboration-metrics": CollaborationMetric.objects.create(
            company=company,
            agent=agent,
            peer=peer,
            interaction_type="x",
            score=1,
            created_at=now,
        ),
        "artifacts": ArtifactFactory(company=company, created_by=agent, task=task),
        "projects": ProjectFactory(company=company, status="completed"),
        "personality-presets": PersonalityPreset.objects.create(
            company=company, name="p", created_at=now, updated_at=now
        ),
    }


@pytest.fixture(params=["agent", "human"])
def principal_client(request, caller, human_client):
    return caller.client if request.param == "agent" else human_client


RESOURCES = [
    "tasks",
    "costs",
    "messages",
    "audit",
    "parked-contexts",
    "heartbeats",
    "lifecycle-events",
    "checkpoints",
    "task-metrics",
    "collaboration-metrics",
    "artifacts",
    "projects",
    "personality-presets",
]


@pytest.mark.parametrize("resource", RESOURCES)
def test_other_company_objects_are_invisible_and_untouchable(principal_client, theirs, resource):
    obj = theirs[resource]
    listed = principal_client.get(f"/api/v1/{resource}")
    assert listed.status_code == 200
    results = listed.json()["results"]
    if resource == "audit":  # the caller's own company has key-issue entries
        results = [r for r in results if r["actor_agent"] == obj.actor_agent_id]
    assert results == []
    detail = f"/api/v1/{resource}/{obj.pk}"
    assert principal_client.get(detail).status_code == 404
    if resource in MUTABLE:
        assert principal_client.patch(detail, {"name": "x"}, format="json").status_code == 404
    if resource in DELETABLE:
        assert principal_client.delete(detail).status_code == 404
    assert type(obj).objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize(
    ("url", "payload", "field"),
    [
        (
            "/api/v1/costs",
            {"provider": "p", "model": "m", "input_tokens": 1, "output_tokens": 1, "cost": "1"},
            "task",
        ),
        ("/api/v1/tasks", {"title": "t"}, "assignee"),
        ("/api/v1/tasks", {"title": "t"}, "project"),
        ("/api/v1/artifacts", {"artifact_type": "a", "name": "n"}, "task"),
        ("/api/v1/collaboration-metrics", {"interaction_type": "x", "score": 1}, "peer"),
        ("/api/v1/task-metrics", {"success": True}, "task"),
    ],
)
def test_cannot_reference_another_companys_objects(caller, outsider, theirs, url, payload, field):
    target = {
        "task": theirs["tasks"],
        "assignee": outsider.agent,
        "peer": outsider.agent,
        "project": theirs["projects"],
    }[field]
    counts = {m: m.objects.count() for m in (CostRecord, TaskMetric, CollaborationMetric)}
    response = caller.client.post(url, {**payload, field: target.pk}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert response.json()["errors"][0]["code"] == "does_not_exist"
    assert counts == {m: m.objects.count() for m in counts}


def test_runtime_state_and_settings_of_another_company(principal_client, outsider):
    now = timezone.now()
    AgentRuntimeState.objects.create(
        company=outsider.company, agent=outsider.agent, status="active", updated_at=now
    )
    Setting.objects.create(
        company=outsider.company,
        namespace="budget",
        key="monthly_limit",
        value={"amount": "1"},
        created_at=now,
        updated_at=now,
    )
    url = f"/api/v1/runtime-states/{outsider.agent.pk}"
    assert principal_client.get(url).status_code == 404
    assert principal_client.put(url, {"status": "paused"}, format="json").status_code == 404
    assert AgentRuntimeState.objects.get(agent=outsider.agent).status == "active"
    assert principal_client.get("/api/v1/runtime-states").json()["results"] == []
    assert principal_client.get("/api/v1/settings").json()["results"] == []
    assert principal_client.get("/api/v1/settings/budget/monthly_limit").status_code == 404
    assert principal_client.delete("/api/v1/settings/budget/monthly_limit").status_code == 404
    assert Setting.objects.filter(company=outsider.company).count() == 1


def test_filters_on_another_companys_ids_match_nothing(caller, outsider, theirs):
    for resource, params in [
        ("costs", {"agent": outsider.agent.pk}),
        ("tasks", {"assignee": outsider.agent.pk}),
        ("audit", {"agent": outsider.agent.pk}),
        ("artifacts", {"task": theirs["tasks"].pk}),
    ]:
        response = caller.client.get(f"/api/v1/{resource}", params)
        assert response.status_code == 200
        assert response.json()["results"] == []


def test_summary_and_history_exclude_other_companies(caller, theirs):
    summary = caller.client.get("/api/v1/costs/summary", {"group_by": "agent"}).json()
    assert (summary["totals"], summary["groups"]) == ([], [])
    history = caller.client.get("/api/v1/messages/history", {"channel": "general"}).json()
    assert history == []
