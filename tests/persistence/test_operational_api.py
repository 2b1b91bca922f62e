"""The operational-data endpoints: create, read, filter, paginate, change (where mutable)."""

import pytest

from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CostRecord,
    Heartbeat,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
)
from tests.persistence.factories import (
    CostRecordFactory,
    MessageFactory,
    ProjectFactory,
    TaskFactory,
    at,
)

pytestmark = pytest.mark.django_db


def test_task_create_and_read(caller, peer):
    project = ProjectFactory(company=caller.company)
    response = caller.client.post(
        "/api/v1/tasks",
        {"title": "Index the wiki", "assignee": peer.agent.pk, "project": project.pk},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    task = Task.objects.get(pk=body["id"])
    assert body == {
        "id": task.pk,
        "title": "Index the wiki",
        "description": "",
        "status": "created",
        "assignee": peer.agent.pk,
        "project": project.pk,
        "created_by": caller.agent.pk,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
        "completed_at": None,
    }
    assert caller.client.get(f"/api/v1/tasks/{task.pk}").json() == body


def test_task_list_filters_and_cursor_pages(caller, peer):
    company = caller.company
    project = ProjectFactory(company=company)
    tasks = [
        TaskFactory(
            company=company,
            created_at=at(day),
            status="in_progress" if day % 2 else "completed",
            assignee=caller.agent if day <= 3 else peer.agent,
            project=project if day == 5 else None,
        )
        for day in range(1, 8)
    ]
    newest_first = [t.pk for t in reversed(tasks)]
    page1 = caller.client.get("/api/v1/tasks", {"page_size": 3}).json()
    assert [t["id"] for t in page1["results"]] == newest_first[:3]
    assert page1["previous"] is None
    page2 = caller.client.get(page1["next"]).json()
    assert [t["id"] for t in page2["results"]] == newest_first[3:6]
    page3 = caller.client.get(page2["next"]).json()
    assert [t["id"] for t in page3["results"]] == newest_first[6:]
    assert page3["next"] is None

    def ids(**params):
        return [t["id"] for t in caller.client.get("/api/v1/tasks", params).json()["results"]]

    assert ids(status="in_progress") == [tasks[6].pk, tasks[4].pk, tasks[2].pk, tasks[0].pk]
    assert ids(assignee=caller.agent.pk) == [tasks[2].pk, tasks[1].pk, tasks[0].pk]
    assert ids(project=project.pk) == [tasks[4].pk]
    assert ids(status="completed", assignee=peer.agent.pk) == [tasks[5].pk, tasks[3].pk]
    bad = caller.client.get("/api/v1/tasks", {"status": "dreaming"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "status"


def test_agent_moves_its_task_to_completed(caller):
    task = TaskFactory(company=caller.company, assignee=caller.agent, status="in_progress")
    response = caller.client.patch(
        f"/api/v1/tasks/{task.pk}", {"status": "completed"}, format="json"
    )
    assert response.status_code == 200
    task.refresh_from_db()
    assert task.status == "completed"
    assert task.completed_at is not None
    assert response.json()["completed_at"] is not None


def test_cost_record_via_api(caller):
    task = TaskFactory(company=caller.company)
    response = caller.client.post(
        "/api/v1/costs",
        {
            "task": task.pk,
            "provider": "openai",
            "model": "gpt-4o",
            "input_tokens": 1000,
            "output_tokens": 200,
            "cost": "0.0123",
            "currency": "usd",
            "occurred_at": "2026-03-01T10:00:00Z",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body == {
        "id": body["id"],
        "agent": caller.agent.pk,
        "task": task.pk,
        "provider": "openai",
        "model": "gpt-4o",
        "input_tokens": 1000,
        "output_tokens": 200,
        "cost": "0.0123000000",
        "currency": "USD",
        "occurred_at": "2026-03-01T10:00:00Z",
        "created_at": body["created_at"],
    }
    bad = caller.client.post(
        "/api/v1/costs",
        {"provider": "x", "model": "y", "input_tokens": -5, "output_tokens": 0, "cost": "zz"},
        format="json",
    )
    assert bad.status_code == 400
    assert {e["field"] for e in bad.json()["errors"]} == {"input_tokens", "cost"}
    assert CostRecord.objects.count() == 1


def test_cost_list_filters(caller, peer):
    company = caller.company
    task = TaskFactory(company=company)
    c1 = CostRecordFactory(company=company, agent=caller.agent, task=task, occurred_at=at(1))
    c2 = CostRecordFactory(company=company, agent=peer.agent, model="o3", occurred_at=at(2))
    c3 = CostRecordFactory(company=company, agent=caller.agent, occurred_at=at(3))

    def ids(**params):
        response = caller.client.get("/api/v1/costs", params)
        assert response.status_code == 200, response.json()
        return [r["id"] for r in response.json()["results"]]

    assert ids() == [c3.pk, c2.pk, c1.pk]
    assert ids(agent=caller.agent.pk) == [c3.pk, c1.pk]
    assert ids(task=task.pk) == [c1.pk]
    assert ids(model="o3") == [c2.pk]
    assert ids(**{"from": "2026-03-02T00:00:00Z", "to": "2026-03-03T12:00:00Z"}) == [c2.pk]


def test_ledger_endpoints_refuse_changes(caller):
    record = CostRecordFactory(company=caller.company, agent=caller.agent)
    for method in ("put", "patch", "delete"):
        response = getattr(caller.client, method)(f"/api/v1/costs/{record.pk}", {})
        assert response.status_code == 405
        assert response.json()["code"] == "method_not_allowed"
    assert CostRecord.objects.get(pk=record.pk).cost == record.cost


def test_messages_send_list_and_history(caller, peer):
    response = caller.client.post(
        "/api/v1/messages",
        {"channel": "eng", "content": "deploying", "sender_agent": peer.agent.pk},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["sender_agent"] == caller.agent.pk  # the sender is always the caller
    older = [
        MessageFactory(company=caller.company, channel="eng", created_at=at(d)) for d in (1, 2)
    ]
    MessageFactory(company=caller.company, channel="ops", created_at=at(3))
    listed = caller.client.get("/api/v1/messages", {"channel": "eng"}).json()["results"]
    assert [m["content"] for m in listed] == ["deploying", older[1].content, older[0].content]
    history = caller.client.get("/api/v1/messages/history", {"channel": "eng", "limit": 2})
    assert [m["content"] for m in history.json()] == [older[1].content, "deploying"]
    assert caller.client.get("/api/v1/messages/history").status_code == 400


def test_audit_entries(caller, peer, human_client):
    response = caller.client.post(
        "/api/v1/audit",
        {"action_type": "tool.shell", "verdict": "denied", "risk_level": "high"},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["actor_agent"] == caller.agent.pk
    peer.client.post("/api/v1/audit", {"action_type": "tool.read"}, format="json")
    mine = caller.client.get("/api/v1/audit").json()["results"]
    assert [e["action_type"] for e in mine] == ["tool.shell"]  # an agent sees its own
    everything = human_client.get("/api/v1/audit").json()["results"]
    assert [e["action_type"] for e in everything][:2] == ["tool.read", "tool.shell"]
    assert {e["action_type"] for e in everything[2:]} == {"api_key.issued"}

    def actions(**params):
        body = human_client.get("/api/v1/audit", params).json()
        return [e["action_type"] for e in body["results"]]

    assert actions(verdict="denied") == ["tool.shell"]
    assert actions(risk_level="high") == ["tool.shell"]
    assert actions(agent=peer.agent.pk) == ["tool.read"]
    assert actions(agent=caller.agent.pk) == ["tool.shell"]
    assert actions(action_type="tool.read") == ["tool.read"]
    assert actions(**{"from": "2000-01-01T00:00:00Z", "to": "2000-01-02T00:00:00Z"}) == []
    assert human_client.get("/api/v1/audit", {"verdict": "maybe"}).status_code == 400


def test_parked_context_lifecycle(caller):
    task = TaskFactory(company=caller.company)
    response = caller.client.post(
        "/api/v1/parked-contexts",
        {
            "execution_id": "run-1",
            "task": task.pk,
            "reason": "awaiting approval",
            "context": {"turn": 3},
        },
        format="json",
    )
    assert response.status_code == 201
    parked_id = response.json()["id"]
    listed = caller.client.get("/api/v1/parked-contexts", {"execution_id": "run-1"}).json()
    assert [p["id"] for p in listed["results"]] == [parked_id]
    assert caller.client.get("/api/v1/parked-contexts", {"resumed": "true"}).json()["results"] == []
    resumed = caller.client.patch(
        f"/api/v1/parked-contexts/{parked_id}", {"resumed": True}, format="json"
    )
    assert resumed.status_code == 200
    assert resumed.json()["resumed_at"] is not None
    again = caller.client.patch(
        f"/api/v1/parked-contexts/{parked_id}", {"resumed": True}, format="json"
    )
    assert again.status_code == 409
    assert again.json()["code"] == "already_resumed"
    assert caller.client.delete(f"/api/v1/parked-contexts/{parked_id}").status_code == 204
    assert not ParkedContext.objects.exists()


def test_runtime_heartbeats_lifecycle_checkpoints(caller, peer):
    url = f"/api/v1/runtime-states/{caller.agent.pk}"
    assert caller.client.get(url).status_code == 404
    put = caller.client.put(url, {"status": "active", "execution_id": "run-9"}, format="json")
    assert put.status_code == 200, put.json()
    assert put.json()["status"] == "active"
    caller.client.put(url, {"status": "idle"}, format="json")
    assert AgentRuntimeState.objects.get(agent=caller.agent).status == "idle"
    peer.client.put(f"/api/v1/runtime-states/{peer.agent.pk}", {"status": "active"}, format="json")
    active = caller.client.get("/api/v1/runtime-states", {"active": "true"}).json()["results"]
    assert [s["agent"] for s in active] == [peer.agent.pk]

    assert (
        caller.client.post("/api/v1/heartbeats", {"status": "ok"}, format="json").status_code == 201
    )
    assert Heartbeat.objects.get().agent == caller.agent
    event = caller.client.post("/api/v1/lifecycle-events", {"event_type": "started"}, format="json")
    assert event.status_code == 201
    assert event.json()["agent"] == caller.agent.pk

    first = caller.client.post(
        "/api/v1/checkpoints",
        {"execution_id": "run-9", "turn": 1, "state": {"a": 1}},
        format="json",
    )
    assert first.status_code == 201
    dup = caller.client.post(
        "/api/v1/checkpoints", {"execution_id": "run-9", "turn": 1}, format="json"
    )
    assert dup.status_code == 409
    assert dup.json()["code"] == "checkpoint_exists"
    assert caller.client.delete(f"/api/v1/checkpoints/{first.json()['id']}").status_code == 204
    assert not Checkpoint.objects.exists()


def test_metrics(caller, peer):
    task = TaskFactory(company=caller.company, assignee=caller.agent)
    response = caller.client.post(
        "/api/v1/task-metrics",
        {"task": task.pk, "success": True, "turns": 4, "tokens": 900, "duration_seconds": 12.5},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["agent"] == caller.agent.pk
    collab = caller.client.post(
        "/api/v1/collaboration-metrics",
        {"peer": peer.agent.pk, "interaction_type": "review", "score": 0.75},
        format="json",
    )
    assert collab.status_code == 201
    self_rating = caller.client.post(
        "/api/v1/collaboration-metrics",
        {"peer": caller.agent.pk, "interaction_type": "review", "score": 0.5},
        format="json",
    )
    assert self_rating.status_code == 400
    assert self_rating.json()["code"] == "peer_is_self"
    out_of_range = caller.client.post(
        "/api/v1/collaboration-metrics",
        {"peer": peer.agent.pk, "interaction_type": "review", "score": 1.5},
        format="json",
    )
    assert out_of_range.status_code == 400
    listed = caller.client.get("/api/v1/task-metrics", {"task": task.pk}).json()["results"]
    assert [(m["turns"], m["success"]) for m in listed] == [(4, True)]


def test_artifacts(caller):
    task = TaskFactory(company=caller.company)
    created = caller.client.post(
        "/api/v1/artifacts",
        {"task": task.pk, "artifact_type": "report", "name": "q1.md", "content": "# Q1"},
        format="json",
    )
    assert created.status_code == 201
    artifact_id = created.json()["id"]
    assert created.json()["created_by"] == caller.agent.pk
    changed = caller.client.patch(
        f"/api/v1/artifacts/{artifact_id}", {"name": "q1-final.md"}, format="json"
    )
    assert changed.json()["name"] == "q1-final.md"
    listed = caller.client.get("/api/v1/artifacts", {"artifact_type": "report"}).json()
    assert [a["id"] for a in listed["results"]] == [artifact_id]
    assert caller.client.delete(f"/api/v1/artifacts/{artifact_id}").status_code == 204
    assert not Artifact.objects.exists()


def test_projects(human_client, caller):
    created = human_client.post(
        "/api/v1/projects", {"name": "Atlas", "lead": caller.agent.pk}, format="json"
    )
    assert created.status_code == 201, created.json()
    project_id = created.json()["id"]
    dup = human_client.post("/api/v1/projects", {"name": "Atlas"}, format="json")
    assert dup.status_code == 409
    assert dup.json()["code"] == "project_name_taken"
    open_delete = human_client.delete(f"/api/v1/projects/{project_id}")
    assert open_delete.status_code == 409
    assert open_delete.json()["code"] == "project_open"
    closed = human_client.patch(
        f"/api/v1/projects/{project_id}", {"status": "completed"}, format="json"
    )
    assert closed.status_code == 200
    assert closed.json()["closed_at"] is not None
    by_lead = caller.client.get("/api/v1/projects", {"lead": caller.agent.pk}).json()
    assert [p["name"] for p in by_lead["results"]] == ["Atlas"]
    assert caller.client.get("/api/v1/projects", {"status": "active"}).json()["count"] == 0
    assert human_client.delete(f"/api/v1/projects/{project_id}").status_code == 204
    assert not Project.objects.exists()
    assert AuditEntry.objects.filter(action_type="project.deleted").count() == 1


def test_settings_and_budget_validation(human_client, caller):
    url = "/api/v1/settings/budget/monthly_limit"
    bad = human_client.put(url, {"value": {"amount": "-1", "currency": "usd"}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_setting"
    assert bad.json()["errors"][0]["field"] == "value.amount"
    assert not Setting.objects.exists()
    ok = human_client.put(url, {"value": {"amount": "250", "currency": "eur"}}, format="json")
    assert ok.status_code == 200
    assert ok.json()["value"] == {"amount": "250", "currency": "EUR", "alert_threshold": "0.8"}
    assert caller.client.get(url).json()["value"]["currency"] == "EUR"
    assert caller.client.get("/api/v1/costs/budget").json()["limit"] == "250.0000000000"
    listed = caller.client.get("/api/v1/settings", {"namespace": "budget"}).json()
    assert [(s["namespace"], s["key"]) for s in listed["results"]] == [("budget", "monthly_limit")]
    assert AuditEntry.objects.filter(action_type="setting.changed").count() == 1
    assert human_client.delete(url).status_code == 204
    assert caller.client.get(url).status_code == 404


def test_presets(human_client, caller):
    created = human_client.post(
        "/api/v1/personality-presets",
        {"name": "terse", "traits": {"verbosity": 0.1}},
        format="json",
    )
    assert created.status_code == 201
    dup = human_client.post("/api/v1/personality-presets", {"name": "terse"}, format="json")
    assert dup.status_code == 409
    by_name = caller.client.get("/api/v1/personality-presets", {"name": "terse"}).json()
    assert [p["traits"] for p in by_name["results"]] == [{"verbosity": 0.1}]
    assert PersonalityPreset.objects.count() == 1
