"""Write permissions: what an agent may write (its own records) and what each human role may."""

import pytest

from persistence.access import AGENT_WRITES, HUMAN_WRITES
from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from tests.persistence.conftest import make_human_client
from tests.persistence.factories import (
    ArtifactFactory,
    ParkedContextFactory,
    ProjectFactory,
    TaskFactory,
)

pytestmark = pytest.mark.django_db

COST = {"provider": "openai", "model": "m", "input_tokens": 1, "output_tokens": 1, "cost": "1"}


def _post(client, url, data):
    return client.post(url, data, format="json")


def _denied(response, code):
    assert response.status_code == 403, response.json()
    assert response.json()["code"] == code


# Agents ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "payload", "model"),
    [
        ("/api/v1/costs", {**COST}, CostRecord),
        ("/api/v1/heartbeats", {"status": "ok"}, Heartbeat),
        ("/api/v1/lifecycle-events", {"event_type": "paused"}, LifecycleEvent),
        ("/api/v1/parked-contexts", {"execution_id": "x"}, ParkedContext),
        ("/api/v1/artifacts", {"artifact_type": "doc", "name": "n"}, Artifact),
    ],
)
def test_agent_cannot_write_records_for_another_agent(caller, peer, url, payload, model):
    owner_field = "created_by" if model is Artifact else "agent"
    response = _post(caller.client, url, {**payload, owner_field: peer.agent.pk})
    _denied(response, "not_own_record")
    assert not model.objects.exists()
    mine = _post(caller.client, url, {**payload, owner_field: caller.agent.pk})
    assert mine.status_code == 201


def test_agent_cannot_write_task_metrics_for_another_agent(caller, peer):
    task = TaskFactory(company=caller.company)
    response = _post(
        caller.client,
        "/api/v1/task-metrics",
        {"task": task.pk, "success": True, "agent": peer.agent.pk},
    )
    _denied(response, "not_own_record")
    assert not TaskMetric.objects.exists()


def test_agent_cannot_set_another_agents_runtime_state(caller, peer):
    response = caller.client.put(
        f"/api/v1/runtime-states/{peer.agent.pk}", {"status": "paused"}, format="json"
    )
    _denied(response, "not_own_record")
    assert not AgentRuntimeState.objects.exists()


def test_agent_updates_only_tasks_assigned_to_it(caller, peer):
    theirs = TaskFactory(company=caller.company, assignee=peer.agent, status="in_progress")
    mine = TaskFactory(company=caller.company, assignee=caller.agent, status="in_progress")
    response = caller.client.patch(
        f"/api/v1/tasks/{theirs.pk}", {"status": "failed"}, format="json"
    )
    _denied(response, "not_own_record")
    theirs.refresh_from_db()
    assert theirs.status == "in_progress"
    reassign = caller.client.patch(
        f"/api/v1/tasks/{mine.pk}", {"assignee": peer.agent.pk}, format="json"
    )
    _denied(reassign, "field_not_writable")
    mine.refresh_from_db()
    assert mine.assignee == caller.agent
    assert (
        caller.client.patch(
            f"/api/v1/tasks/{mine.pk}", {"status": "in_review"}, format="json"
        ).status_code
        == 200
    )


def test_agent_cannot_delete_tasks(caller):
    task = TaskFactory(company=caller.company, assignee=caller.agent)
    _denied(caller.client.delete(f"/api/v1/tasks/{task.pk}"), "agent_write_forbidden")
    assert Task.objects.filter(pk=task.pk).exists()


def test_agent_changes_only_its_own_artifacts_and_parked_contexts(caller, peer):
    artifact = ArtifactFactory(company=caller.company, created_by=peer.agent)
    _denied(
        caller.client.patch(f"/api/v1/artifacts/{artifact.pk}", {"name": "x"}, format="json"),
        "not_own_record",
    )
    _denied(caller.client.delete(f"/api/v1/artifacts/{artifact.pk}"), "not_own_record")
    parked = ParkedContextFactory(company=caller.company, agent=peer.agent)
    _denied(
        caller.client.patch(
            f"/api/v1/parked-contexts/{parked.pk}", {"resumed": True}, format="json"
        ),
        "not_own_record",
    )
    artifact.refresh_from_db()
    parked.refresh_from_db()
    assert artifact.name != "x"
    assert parked.resumed_at is None


def test_message_sender_cannot_be_spoofed(caller, peer):
    response = _post(
        caller.client,
        "/api/v1/messages",
        {"channel": "c", "content": "hi", "sender_agent": peer.agent.pk, "sender_user": 1},
    )
    assert response.status_code == 201
    message = Message.objects.get()
    assert (message.sender_agent, message.sender_user) == (caller.agent, None)


@pytest.mark.parametrize(
    ("method", "url", "payload", "model"),
    [
        ("post", "/api/v1/projects", {"name": "p"}, Project),
        ("post", "/api/v1/personality-presets", {"name": "p"}, PersonalityPreset),
        ("put", "/api/v1/settings/budget/monthly_limit", {"value": {"amount": "1"}}, Setting),
    ],
)
def test_agent_cannot_manage_company_configuration(caller, method, url, payload, model):
    response = getattr(caller.client, method)(url, payload, format="json")
    _denied(response, "agent_write_forbidden")
    assert not model.objects.exists()


def test_agent_audit_entry_is_always_its_own(caller, peer):
    response = _post(
        caller.client, "/api/v1/audit", {"action_type": "x", "actor_agent": peer.agent.pk}
    )
    assert response.status_code == 201
    assert AuditEntry.objects.get(action_type="x").actor_agent == caller.agent


# Humans ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "payload"),
    [
        ("post", "/api/v1/tasks", {"title": "t"}),
        ("post", "/api/v1/messages", {"channel": "c", "content": "x"}),
        ("post", "/api/v1/projects", {"name": "p"}),
        ("post", "/api/v1/audit", {"action_type": "x"}),
        ("put", "/api/v1/settings/ui/theme", {"value": "dark"}),
    ],
)
def test_viewer_reads_but_never_writes(viewer_client, method, url, payload):
    before = (
        Task.objects.count(),
        Message.objects.count(),
        Project.objects.count(),
        AuditEntry.objects.count(),
        Setting.objects.count(),
    )
    response = getattr(viewer_client, method)(url, payload, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert before == (
        Task.objects.count(),
        Message.objects.count(),
        Project.objects.count(),
        AuditEntry.objects.count(),
        Setting.objects.count(),
    )
    assert viewer_client.get("/api/v1/tasks").status_code == 200


def test_operator_may_not_change_settings_or_delete_tasks(operator_client, company):
    response = operator_client.put(
        "/api/v1/settings/budget/monthly_limit", {"value": {"amount": "5"}}, format="json"
    )
    _denied(response, "role_insufficient")
    assert not Setting.objects.exists()
    task = TaskFactory(company=company)
    _denied(operator_client.delete(f"/api/v1/tasks/{task.pk}"), "role_insufficient")
    assert Task.objects.filter(pk=task.pk).exists()
    created = _post(operator_client, "/api/v1/tasks", {"title": "triage"})
    assert created.status_code == 201
    assert created.json()["created_by"] is None


def test_admin_may_change_settings_and_delete_tasks(human_client, company):
    response = human_client.put(
        "/api/v1/settings/budget/monthly_limit", {"value": {"amount": "5"}}, format="json"
    )
    assert response.status_code == 200
    task = TaskFactory(company=company)
    assert human_client.delete(f"/api/v1/tasks/{task.pk}").status_code == 204
    assert not Task.objects.filter(pk=task.pk).exists()
    entry = AuditEntry.objects.get(action_type="task.deleted")
    assert entry.actor_user == human_client.membership.user


def test_task_with_costs_cannot_be_deleted(human_client, company):
    from tests.persistence.factories import CostRecordFactory

    task = TaskFactory(company=company)
    CostRecordFactory(company=company, task=task)
    response = human_client.delete(f"/api/v1/tasks/{task.pk}")
    assert response.status_code == 409
    assert response.json()["code"] == "task_has_costs"
    assert Task.objects.filter(pk=task.pk).exists()


@pytest.mark.parametrize(
    ("url", "payload"),
    [
        ("/api/v1/heartbeats", {"agent": None, "status": "ok"}),
        ("/api/v1/task-metrics", {"success": True, "task": "TASK"}),
    ],
)
def test_people_do_not_write_agent_telemetry(human_client, caller, url, payload):
    task = TaskFactory(company=caller.company)
    body = {**payload, "agent": caller.agent.pk}
    if "task" in body:
        body["task"] = task.pk
    _denied(_post(human_client, url, body), "human_write_forbidden")
    assert not Heartbeat.objects.exists()
    assert not TaskMetric.objects.exists()


def test_owner_role_outranks_admin(company):
    owner = make_human_client(company, "owner")
    project = ProjectFactory(company=company, status="completed")
    assert owner.delete(f"/api/v1/projects/{project.pk}").status_code == 204


def test_policy_table_is_explicit():
    """Every agent-writable resource names its owner column; every human rule a real role."""
    assert AGENT_WRITES["cost_record"] == {"create": "agent"}
    assert AGENT_WRITES["heartbeat"] == {"create": "agent"}
    assert AGENT_WRITES["message"] == {"create": "sender_agent"}
    assert AGENT_WRITES["task"] == {"create": "*", "update": "assignee"}
    assert "setting" not in AGENT_WRITES
    assert all(
        role in {"operator", "admin", "owner"}
        for rules in HUMAN_WRITES.values()
        for role in rules.values()
    )


def test_operator_may_pause_an_agent_viewer_may_not(operator_client, viewer_client, caller):
    url = f"/api/v1/runtime-states/{caller.agent.pk}"
    assert viewer_client.put(url, {"status": "paused"}, format="json").status_code == 403
    assert not AgentRuntimeState.objects.exists()
    response = operator_client.put(url, {"status": "paused"}, format="json")
    assert response.status_code == 200
    assert AgentRuntimeState.objects.get(agent=caller.agent).status == "paused"


def test_reopening_a_project_clears_closed_at(human_client, company):
    project = ProjectFactory(company=company)
    url = f"/api/v1/projects/{project.pk}"
    assert human_client.patch(url, {"status": "cancelled"}, format="json").json()["closed_at"]
    reopened = human_client.patch(url, {"status": "active"}, format="json").json()
    assert (reopened["status"], reopened["closed_at"]) == ("active", None)
