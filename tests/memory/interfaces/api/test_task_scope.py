"""Issue 33: working memory scoped to a task — ``task_id`` on store, search and context; the
task's working memories are read only within the task and archived when it ends."""

import pytest

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from tests.conftest import make_agent_caller
from tests.persistence.factories import CompanyFactory, TaskFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"
NOTE = "Half of the billing fixtures are loaded; the invoices table is next."
GENERAL = "The billing fixtures live in fixtures/billing.json."


def store(caller, content, **fields):
    body = {"content": content, "category": "working", **fields}
    return caller.client.post(URL, body, format="json")


def search_ids(caller, **fields):
    response = caller.client.post(
        f"{URL}/search", {"query": "billing fixtures", **fields}, format="json"
    )
    assert response.status_code == 200, response.json()
    return {hit["memory"]["id"] for hit in response.json()["results"]}


def context_ids(caller, **fields):
    body = {"query": "billing fixtures", "token_budget": 2000, "include_org": False, **fields}
    response = caller.client.post(f"{URL}/context", body, format="json")
    assert response.status_code == 200, response.json()
    return {entry["id"] for entry in response.json()["included"]}


def assert_problem(response, status, code, field):
    assert response.status_code == status, response.json()
    body = response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert body["code"] == code, body
    assert [e["field"] for e in body["errors"]] == [field], body


def test_task_scoped_working_memory_is_read_within_its_task_only(caller, company):
    task, other_task = TaskFactory(company=company), TaskFactory(company=company)
    scoped = store(caller, NOTE, task_id=task.pk)
    assert scoped.status_code == 201, scoped.json()
    general = store(caller, GENERAL)
    scoped_id, general_id = scoped.json()["id"], general.json()["id"]
    row = Memory.objects.get(pk=scoped_id)
    assert (row.task_id, row.category, row.agent_id) == (task.pk, "working", caller.agent.pk)
    assert Memory.objects.get(pk=general_id).task_id is None

    # Within the task: its working memory and the unscoped ones.
    assert search_ids(caller, task_id=task.pk) == {scoped_id, general_id}
    assert context_ids(caller, task_id=task.pk) == {scoped_id, general_id}
    # Outside it (no task, or another task): the task's notes are not there.
    assert search_ids(caller) == {general_id}
    assert search_ids(caller, task_id=other_task.pk) == {general_id}
    assert context_ids(caller) == {general_id}
    # The memory itself reports its scope.
    detail = caller.client.get(f"{URL}/{scoped_id}").json()
    assert detail["task_id"] == task.pk


def test_same_note_in_two_tasks_is_two_memories(caller, company):
    first, second = TaskFactory(company=company), TaskFactory(company=company)
    a = store(caller, NOTE, task_id=first.pk).json()
    again = store(caller, NOTE, task_id=first.pk).json()
    b = store(caller, NOTE, task_id=second.pk).json()
    unscoped = store(caller, NOTE).json()
    assert (again["id"], again["deduplicated"]) == (a["id"], True)
    assert len({a["id"], b["id"], unscoped["id"]}) == 3
    assert Memory.objects.filter(agent=caller.agent).count() == 3


def test_ending_the_task_archives_its_working_memories(caller, peer, company):
    task, other_task = (
        TaskFactory(company=company, assignee=caller.agent),
        TaskFactory(company=company),
    )
    mine = store(caller, NOTE, task_id=task.pk).json()["id"]
    theirs = store(peer, "Peer's note on the same task.", task_id=task.pk).json()["id"]
    elsewhere = store(caller, "A note of another task.", task_id=other_task.pk).json()["id"]
    general = store(caller, GENERAL).json()["id"]

    # The assignee completes its task through the tasks API.
    response = caller.client.patch(
        f"/api/v1/tasks/{task.pk}", {"status": "completed"}, format="json"
    )
    assert response.status_code == 200, response.json()

    assert set(Memory.objects.values_list("id", flat=True).filter(task=task)) == set()
    archived = ArchivedMemory.objects.filter(original_id__in=[mine, theirs])
    assert {(str(a.original_id), a.agent_id, a.mode, a.metadata["task_id"]) for a in archived} == {
        (mine, caller.agent.pk, "expired", task.pk),
        (theirs, peer.agent.pk, "expired", task.pk),
    }
    # Other tasks' notes and unscoped memories stay live.
    assert {str(pk) for pk in Memory.objects.values_list("id", flat=True)} == {elsewhere, general}
    # Archived like any removal: restorable by original id (as an unscoped working memory).
    restored = caller.client.post(f"/api/v1/archive/{mine}/restore")
    assert restored.status_code == 200, restored.json()
    assert Memory.objects.get(pk=restored.json()["memory_id"]).task_id is None

    # An ended task accepts no more working memories.
    assert_problem(store(caller, NOTE, task_id=task.pk), 409, "task_ended", "task_id")
    assert Memory.objects.filter(agent=caller.agent).count() == 3


def test_deleting_a_task_archives_its_working_memories_first(caller, company, human_client):
    task = TaskFactory(company=company)
    note = store(caller, NOTE, task_id=task.pk).json()["id"]
    response = human_client.delete(f"/api/v1/tasks/{task.pk}")
    assert response.status_code == 204
    assert not Memory.objects.filter(pk=note).exists()
    assert ArchivedMemory.objects.get(original_id=note).metadata["task_id"] == task.pk


def test_task_scope_is_refused_where_it_cannot_hold(caller, company):
    foreign = TaskFactory(company=CompanyFactory())
    live = TaskFactory(company=company)
    assert_problem(store(caller, NOTE, task_id=foreign.pk), 400, "task_not_found", "task_id")
    assert_problem(store(caller, NOTE, task_id=999_999), 400, "task_not_found", "task_id")
    semantic = {"content": GENERAL, "category": "semantic", "task_id": live.pk}
    assert_problem(
        caller.client.post(URL, semantic, format="json"), 400, "task_scope_needs_working", "task_id"
    )
    assert_problem(store(caller, NOTE, task_id=0), 400, "validation_error", "task_id")
    batch = {"memories": [{"content": NOTE, "category": "working", "task_id": foreign.pk}]}
    response = caller.client.post(URL, batch, format="json")
    assert_problem(response, 400, "task_not_found", "memories[0].task_id")
    assert not Memory.objects.exists()


def test_another_agent_never_reads_a_task_note(caller, peer, company):
    task = TaskFactory(company=company)
    store(caller, NOTE, task_id=task.pk)
    assert search_ids(peer, task_id=task.pk) == set()
    other = make_agent_caller(company=CompanyFactory())
    assert search_ids(other, task_id=task.pk) == set()


def test_the_memory_tools_take_the_task_too(caller, company):
    """store_memory, search_memory and get_memory_context call the same services."""
    task = TaskFactory(company=company)

    def call(name, **arguments):
        response = caller.client.post(
            f"{URL}/tools/call", {"name": name, "arguments": arguments}, format="json"
        )
        assert response.status_code == 200, response.json()
        return response.json()["data"]

    stored = call("store_memory", content=NOTE, category="working", task_id=task.pk)
    assert Memory.objects.get(pk=stored["id"]).task_id == task.pk

    def found(data):
        return {hit["memory"]["id"] for hit in data["results"]}

    assert found(call("search_memory", query="billing fixtures", task_id=task.pk)) == {stored["id"]}
    assert found(call("search_memory", query="billing fixtures")) == set()
    context = call("get_memory_context", query="billing fixtures", task_id=task.pk)
    assert [entry["id"] for entry in context["included"]] == [stored["id"]]
    assert call("get_memory_context", query="billing fixtures")["included"] == []
