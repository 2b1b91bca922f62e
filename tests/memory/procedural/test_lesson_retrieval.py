"""Procedural lessons in retrieval: tiers in search results, three tiers in the context when
they fit the budget, the discovery tier alone when they do not."""

from __future__ import annotations

import pytest

from memory.core.models.memory import Memory
from memory.core.retrieval.formatting import format_entry
from memory.core.retrieval.packing import estimate_tokens
from memory.procedural.models import ExecutionCapture
from memory.procedural.tasks import capture_execution_report
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL, stored_rationale

pytestmark = pytest.mark.django_db

QUERY = "helm upgrade of the billing service timed out"


@pytest.fixture
def lesson(caller, llm_server) -> Memory:
    report_id = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


def expected_tiers(lesson):
    return {
        "skill_name": lesson.lesson.skill_name,
        "condition": PROPOSAL["condition"],
        "action": PROPOSAL["action"],
        "rationale": stored_rationale(lesson.lesson.report),
        "execution_steps": PROPOSAL["execution_steps"],
        "origin": "failure",
        "source_report_id": str(lesson.lesson.report_id),
        "propagated_from": None,
        "requested_scope": "agent",
        "org_approval_item": None,
        "supersedes": [],
    }


def test_search_returns_all_tiers(caller, lesson):
    caller.client.post(
        "/api/v1/memories", {"content": "Lunch is at noon.", "category": "social"}, format="json"
    )
    response = caller.client.post("/api/v1/memories/search", {"query": QUERY}, format="json")
    assert response.status_code == 200
    hits = response.json()["results"]
    assert hits[0]["memory"]["id"] == str(lesson.pk)
    assert hits[0]["memory"]["content"] == PROPOSAL["discovery"]
    assert hits[0]["memory"]["procedural"] == expected_tiers(lesson)
    assert hits[0]["memory"]["scope"] == "agent"
    assert all(h["memory"]["procedural"] is None for h in hits[1:])


def test_detail_and_list_show_tiers(caller, lesson):
    detail = caller.client.get(f"/api/v1/memories/{lesson.pk}").json()
    assert detail["procedural"] == expected_tiers(lesson)
    listing = caller.client.get("/api/v1/memories", {"category": "procedural"}).json()
    assert listing["results"][0]["procedural"] == expected_tiers(lesson)


def _context(caller, budget):
    response = caller.client.post(
        "/api/v1/memories/context", {"query": QUERY, "token_budget": budget}, format="json"
    )
    assert response.status_code == 200
    return response.json()


def _tokens(lesson, content):
    label = f"procedural, {lesson.created_at:%Y-%m-%d}"
    return estimate_tokens(format_entry(content, label=label))


def test_context_renders_three_tiers_when_they_fit(caller, lesson):
    body = _context(caller, 4000)
    [entry] = body["included"]
    assert (entry["id"], entry["tiers"]) == (str(lesson.pk), "all")
    text = body["messages"][-1]["content"]
    assert PROPOSAL["discovery"] + "\nWhen: " + PROPOSAL["condition"] in text
    assert (
        "\nDo: " + PROPOSAL["action"] + "\nWhy: " + stored_rationale(lesson.lesson.report) in text
    )
    assert "Steps:\n1. Check the hook duration\n2. Re-run with --timeout 900s --atomic" in text


def test_context_falls_back_to_discovery_only(caller, lesson):
    discovery_tokens = _tokens(lesson, PROPOSAL["discovery"])
    full = _context(caller, 4000)["included"][0]["tokens"]
    assert discovery_tokens < full

    body = _context(caller, discovery_tokens)
    [entry] = body["included"]
    assert (entry["tiers"], entry["tokens"]) == ("discovery", discovery_tokens)
    text = body["messages"][-1]["content"]
    assert PROPOSAL["discovery"] in text and "When:" not in text and "Steps:" not in text

    body = _context(caller, discovery_tokens - 1)
    assert body["included"] == []
    assert [(e["id"], e["tiers"]) for e in body["dropped"]] == [(str(lesson.pk), "all")]


def test_other_memories_have_no_tiers(caller):
    caller.client.post(
        "/api/v1/memories",
        {"content": "The billing helm chart lives in infra/charts.", "category": "semantic"},
        format="json",
    )
    [entry] = _context(caller, 4000)["included"]
    assert entry["tiers"] == ""
