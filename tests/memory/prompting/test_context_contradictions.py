"""Two entries that contradict never both reach an agent: a core policy wins over any entry,
an approved org skill over a lesson, otherwise the higher-ranked entry; the one left out is
listed with its reason (API ``dropped[].reason``)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memory.core.models.memory import Memory
from memory.procedural.evolver.services import skill_evolver_run
from memory.procedural.models import ExecutionCapture
from memory.procedural.tasks import capture_execution_report
from orgmemory.models import ApprovalItem, OrgFact
from persistence.services.companies import company_config_set
from tests.conftest import make_agent_caller
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

RECOVERY = "Rolled back, then reran helm upgrade with --timeout 600s and --wait."
PARTIAL = {
    "task_type": "deploy",
    "task_title": "Deploy billing to production",
    "outcome": "partial",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [{"name": "helm_upgrade", "status": "failed"}],
    "retry_count": 2,
    "recovery": RECOVERY,
}
FAILED = {**PARTIAL, "outcome": "failed", "task_title": "Deploy billing to staging"}
QUERY = "deploy billing with helm upgrade; it timed out"


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


def lesson_of(caller, body) -> Memory:
    report_id = caller.client.post("/api/v1/executions", body, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


def context(caller) -> dict:
    response = caller.client.post(
        "/api/v1/memories/context", {"query": QUERY, "token_budget": 4000}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_of_two_contradicting_lessons_only_the_higher_ranked_reaches_the_agent(caller):
    worked, failed = lesson_of(caller, PARTIAL), lesson_of(caller, FAILED)
    body = context(caller)
    included = [entry["id"] for entry in body["included"]]
    dropped = {entry["id"]: entry["reason"] for entry in body["dropped"]}
    assert len(included) == 1 and set(included) | set(dropped) == {str(worked.pk), str(failed.pk)}
    [(left_out, reason)] = dropped.items()
    assert reason == (
        f"contradicts a lesson ranked higher: one says to do '{RECOVERY}', the other to avoid it"
    )
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert Memory.objects.get(pk=left_out).content not in prompt


def test_a_core_policy_wins_over_a_lesson(caller):
    company_config_set(
        company=caller.company,
        data={"org_memory": {"core_policies": [f"Never do this: {RECOVERY}"]}},
    )
    worked = lesson_of(caller, PARTIAL)
    body = context(caller)
    assert body["included"] == []
    [dropped] = body["dropped"]
    assert dropped["id"] == str(worked.pk)
    assert dropped["reason"].startswith("contradicts a core policy: one says to do")


def test_an_approved_org_skill_wins_over_a_contradicting_lesson(company):
    company_config_set(
        company=company, data={"memory": {"procedural": {"evolver": {"enabled": True}}}}
    )
    agents = [make_agent_caller(company=company, name=name) for name in ("ana", "bo", "cy")]
    for agent in agents:
        lesson_of(agent, PARTIAL)
    dissenter = make_agent_caller(company=company, name="dee")
    stale = lesson_of(dissenter, FAILED)  # its own lesson: avoid the recovery

    skill_evolver_run(company=company, trigger="manual")
    item = ApprovalItem.objects.get(source="skill_evolver")
    assert item.evidence["verdict"] == "CONTRADICTS"
    assert [(c["kind"], c["ref"], c["agent"]) for c in item.evidence["contradicts"]] == [
        ("lesson", str(stale.pk), "dee")
    ]
    operator = APIClient()
    operator.force_login(MembershipFactory(company=company, role="operator").user)
    assert (
        operator.post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json").status_code == 200
    )
    skill = OrgFact.objects.get(company=company, category="procedure")

    body = context(dissenter)
    assert f"fact:{skill.fact_id}" in [entry["id"] for entry in body["included"]]
    [dropped] = [entry for entry in body["dropped"] if entry["id"] == str(stale.pk)]
    assert dropped["reason"].startswith("contradicts an approved org skill: one says to do")
    assert str(stale.pk) not in [entry["id"] for entry in body["included"]]
