"""The org skill pool: an ``org`` lesson becomes a human approval item, and only an approval
adds it to the pool (a shared, scope-org procedural memory) — counters, supersession links
(REST and console), FULL and CONFLICT verdicts, rejection, a vanished source, no pool."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture
from memory.procedural.services.org_pool_proposals import (
    ACTION_ORG_POOL,
    ACTION_ORG_POOL_CONFLICT,
)
from memory.procedural.tasks import capture_execution_report
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL
from tests.persistence.factories import AgentFactory, MembershipFactory
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

ORG = {**PROPOSAL, "scope": "org"}


@pytest.fixture
def proposer(settings):
    """Start a proposer answering a given proposal (one server per call)."""
    servers = []

    def start(proposal: dict) -> None:
        server = FakeOpenAIServer(chat_reply=json.dumps(proposal))
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


@pytest.fixture
def author(company):
    return make_agent_caller(company=company, name="ada", role="sre", department="ops")


def _operator(company):
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    client = APIClient()
    client.force_login(membership.user)
    return client


def _capture(caller, body=FAILED_REPORT) -> Memory:
    report_id = caller.client.post("/api/v1/executions", body, format="json").json()["id"]
    assert capture_execution_report(report_id) == "captured"
    return Memory.objects.get(pk=ExecutionCapture.objects.get(report_id=report_id).memory_id)


def _found_in_shared_search(caller, entry: Memory) -> dict:
    """The entry as an agent finds it: a shared-search hit (shared entries have no private
    detail endpoint)."""
    response = caller.client.post(
        "/api/v1/shared/search", {"query": "helm upgrade billing timeout"}, format="json"
    )
    assert response.status_code == 200, response.json()
    [hit] = [h for h in response.json()["results"] if h["memory"]["id"] == str(entry.pk)]
    return hit["memory"]


def _item() -> ApprovalItem:
    return ApprovalItem.objects.get()


def test_an_org_lesson_is_a_proposal_not_a_pool_entry(company, author, proposer):
    proposer(ORG)
    AgentFactory(company=company, role="sre", department="ops")  # strategy none: no copy
    lesson = _capture(author)

    assert not Memory.objects.filter(is_shared=True).exists()
    assert Memory.objects.count() == 1
    assert (lesson.scope, lesson.is_shared) == ("agent", False)
    assert lesson.lesson.requested_scope == "org"
    item = _item()
    assert lesson.lesson.org_approval_item == item.pk
    assert (item.action_type, item.status, item.risk_level, item.source) == (
        ACTION_ORG_POOL,
        "pending",
        "medium",
        "procedural_learning",
    )
    assert item.requester_agent_id == author.agent.pk
    assert item.evidence == {
        "lesson_memory_id": str(lesson.pk),
        "report_ids": [str(lesson.lesson.report_id)],
        "agent_id": author.agent.pk,
        "agents": ["ada"],
        "confidence": 0.9,
        "requested_scope": "org",
        "method": "llm",
        "verdict": "PARTIAL",
        "condition_jaccard": 0.0,
        "action_jaccard": 0.0,
        "condition_coverage": 0.0,
        "contradicts": [],
    }
    assert item.metadata["lesson_memory_id"] == str(lesson.pk)
    assert item.metadata["proposal"]["action"] == PROPOSAL["action"]
    assert lesson.lesson.report.capture.reason == (
        "scope org: proposed to the org skill pool; until approved it reaches its author only"
    )
    detail = author.client.get(f"/api/v1/memories/{lesson.pk}").json()
    assert detail["procedural"]["org_approval_item"] == str(item.pk)
    assert detail["procedural"]["requested_scope"] == "org"


def test_org_lesson_reaches_the_strategys_peers_while_pending(company, author, proposer):
    proposer(ORG)
    company_config_set(company=company, data={"memory": {"procedural": {"propagation": "role"}}})
    same_role = AgentFactory(company=company, role="sre", department="sales")
    lesson = _capture(author)
    copy = Memory.objects.get(agent=same_role)
    assert (copy.scope, copy.lesson.requested_scope) == ("role", "org")
    assert lesson.scope == "role"
    assert lesson.lesson.report.capture.reason == (
        "scope org: proposed to the org skill pool; until approved it reaches role peers"
    )
    assert _item().action_type == ACTION_ORG_POOL


def test_approval_adds_the_pool_entry_and_supersedes_the_lesson(company, author, proposer):
    proposer(ORG)
    company_config_set(company=company, data={"memory": {"procedural": {"propagation": "role"}}})
    same_role = AgentFactory(company=company, role="sre", department="sales")
    lesson = _capture(author)
    copy = Memory.objects.get(agent=same_role)
    item = _item()

    response = _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "approved"
    item.refresh_from_db()
    assert item.consumed_at is not None

    entry = Memory.objects.get(is_shared=True)
    assert (entry.scope, entry.category, entry.agent_id, entry.content) == (
        "org",
        "procedural",
        author.agent.pk,
        PROPOSAL["discovery"],
    )
    assert "org-pool" in entry.tags and "non-inferable" in entry.tags
    assert (entry.application_count, entry.last_applied_at) == (0, None)
    assert entry.lesson.propagated_from_id == lesson.pk
    assert entry.lesson.org_approval_item == item.pk
    assert entry.lesson.origin == "failure"
    for replaced in (lesson, copy):
        replaced.refresh_from_db()
        assert replaced.superseded_by_id == entry.pk and replaced.superseded_at is not None
    audit = AuditEntry.objects.get(action_type="procedural_lesson.org_pool_added")
    assert audit.target_id == str(entry.pk)
    assert audit.details == {
        "approval_item": str(item.pk),
        "lesson": str(lesson.pk),
        "replaces": None,
        "superseded": 2,
    }

    # REST: the entry is visible to any agent of the company, links both ways.
    peer = make_agent_caller(company=company)
    shown = _found_in_shared_search(peer, entry)
    assert (shown["scope"], shown["is_shared"], shown["superseded_by"]) == ("org", True, None)
    assert sorted(shown["procedural"]["supersedes"]) == sorted([str(lesson.pk), str(copy.pk)])
    assert shown["procedural"]["propagated_from"] == str(lesson.pk)
    old = author.client.get(f"/api/v1/memories/{lesson.pk}").json()
    assert old["superseded_by"] == str(entry.pk)


def test_org_pool_entries_count_applications(company, author, proposer):
    proposer(ORG)
    lesson = _capture(author)
    _operator(company).post(f"/api/v1/approvals/{_item().pk}/approve", {}, format="json")
    entry = Memory.objects.get(scope="org")
    first, second = make_agent_caller(company=company), make_agent_caller(company=company)

    response = first.client.post(f"/api/v1/memories/{entry.pk}/applied")
    assert response.status_code == 200
    assert response.json()["application_count"] == 1
    response = second.client.post(f"/api/v1/memories/{entry.pk}/applied")
    assert response.json()["application_count"] == 2
    entry.refresh_from_db()
    assert entry.application_count == 2 and entry.last_applied_at is not None
    # The author's own lesson was superseded by the pool entry: use the entry instead.
    stale = author.client.post(f"/api/v1/memories/{lesson.pk}/applied")
    assert (stale.status_code, stale.json()["code"]) == (409, "memory_superseded")
    outsider = make_agent_caller()
    assert outsider.client.post(f"/api/v1/memories/{entry.pk}/applied").status_code == 404
    entry.refresh_from_db()
    assert entry.application_count == 2


def test_rejection_leaves_the_pool_untouched(company, author, proposer):
    proposer(ORG)
    lesson = _capture(author)
    response = _operator(company).post(
        f"/api/v1/approvals/{_item().pk}/reject", {"reason": "team-specific"}, format="json"
    )
    assert response.status_code == 200
    assert not Memory.objects.filter(is_shared=True).exists()
    lesson.refresh_from_db()
    assert lesson.superseded_at is None and lesson.scope == "agent"


def test_a_vanished_lesson_cannot_be_approved(company, author, proposer):
    proposer(ORG)
    lesson = _capture(author)
    item = _item()
    Memory.objects.filter(pk=lesson.pk).delete()  # erased meanwhile
    response = _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "org_pool_source_gone"
    item.refresh_from_db()
    assert item.status == "pending"  # the approval rolled back with the applier
    assert not Memory.objects.filter(is_shared=True).exists()


def test_a_pool_item_cannot_be_approved_once_shared_knowledge_is_off(company, author, proposer):
    proposer(ORG)
    lesson = _capture(author)
    item = _item()
    company_config_set(
        company=company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    response = _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (403, "shared_knowledge_disabled")
    item.refresh_from_db()
    assert item.status == "pending"  # the approval rolled back with the applier
    assert not Memory.objects.filter(is_shared=True).exists()
    lesson.refresh_from_db()
    assert lesson.superseded_at is None


def test_no_shared_knowledge_means_no_pool_and_the_scope_is_narrowed(company, author, proposer):
    proposer(ORG)
    company_config_set(
        company=company, data={"memory": {"options": {"shared_knowledge_base": False}}}
    )
    lesson = _capture(author)
    assert not ApprovalItem.objects.exists()
    assert (lesson.scope, lesson.lesson.requested_scope) == ("agent", "org")
    assert lesson.lesson.report.capture.reason == (
        "scope org narrowed to agent: the company has no org skill pool "
        "(memory.options.shared_knowledge_base is off) and its propagation strategy is none"
    )


def _pool_entry(company, author, proposer) -> Memory:
    proposer(ORG)
    _capture(author)
    _operator(company).post(f"/api/v1/approvals/{_item().pk}/approve", {}, format="json")
    return Memory.objects.get(scope="org", superseded_at__isnull=True)


def test_full_verdict_supersedes_the_pool_entry_on_approval(company, author, proposer):
    first = _pool_entry(company, author, proposer)
    other = make_agent_caller(company=company, name="bo")
    proposer(
        {
            **ORG,
            "discovery": "Billing helm upgrades need a 900s timeout and --atomic.",
            "condition": PROPOSAL["condition"] + " during a release",
            "confidence": 0.95,
        }
    )
    lesson = _capture(other, {**FAILED_REPORT, "task_title": "Deploy billing again"})
    item = ApprovalItem.objects.get(status="pending")
    assert item.action_type == ACTION_ORG_POOL
    assert item.evidence["verdict"] == "FULL"
    assert item.evidence["superseded"] == {"memory_id": str(first.pk), "content": first.content}

    _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    second = Memory.objects.get(scope="org", superseded_at__isnull=True)
    assert second.content == "Billing helm upgrades need a 900s timeout and --atomic."
    first.refresh_from_db()
    assert first.superseded_by_id == second.pk
    shown = _found_in_shared_search(other, second)
    assert sorted(shown["procedural"]["supersedes"]) == sorted([str(first.pk), str(lesson.pk)])
    assert AuditEntry.objects.filter(
        action_type="procedural_lesson.org_pool_added", details__replaces=str(first.pk)
    ).exists()


def test_conflict_is_escalated_and_approval_replaces_the_entry(company, author, proposer):
    first = _pool_entry(company, author, proposer)
    other = make_agent_caller(company=company, name="bo")
    proposer(
        {
            **ORG,
            "discovery": "Do not retry billing helm upgrades; page the release manager.",
            "action": "Page the release manager and roll back instead of retrying.",
        }
    )
    _capture(other, {**FAILED_REPORT, "task_title": "Deploy billing again"})
    item = ApprovalItem.objects.get(status="pending")
    assert (item.action_type, item.risk_level) == (ACTION_ORG_POOL_CONFLICT, "high")
    assert item.evidence["verdict"] == "CONFLICT"
    assert item.evidence["existing"] == {"memory_id": str(first.pk), "content": first.content}

    _operator(company).post(f"/api/v1/approvals/{item.pk}/approve", {}, format="json")
    live = Memory.objects.get(scope="org", superseded_at__isnull=True)
    assert live.content.startswith("Do not retry")
    first.refresh_from_db()
    assert first.superseded_by_id == live.pk


def test_console_links_supersession_both_ways(company, author, proposer):
    entry = _pool_entry(company, author, proposer)
    lesson = Memory.objects.get(is_shared=False, agent=author.agent)
    item = _item()
    membership = MembershipFactory(company=company, role="viewer", user__password=None)
    client = Client()
    client.force_login(membership.user)

    page = client.get(f"/console/memories/agents/{author.agent.pk}/{lesson.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'id="superseded-by-link" href="/console/memories/shared/{entry.pk}"' in html
    assert f'id="org-approval-link" href="/console/inbox/items/{item.pk}"' in html

    page = client.get(f"/console/memories/shared/{entry.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    assert (
        f'class="supersedes-link" href="/console/memories/agents/{author.agent.pk}/{lesson.pk}"'
        in html
    )
    assert '<dd id="scope">org</dd>' in html
    assert '<dd id="applied">0 times</dd>' in html
    shared_list = client.get("/console/memories/shared").content.decode()
    assert f'href="/console/memories/shared/{entry.pk}"' in shared_list
    assert "org skill pool" in shared_list
    other = make_agent_caller()
    assert client.get(f"/console/memories/shared/{other.agent.pk}").status_code == 404


def test_edited_approval_publishes_the_edited_tiers(company, author, proposer):
    proposer(ORG)
    _capture(author)
    item = _item()
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    approval_decide(
        company=company,
        actor=Principal.for_human(membership.user, company, "operator"),
        item_id=item.pk,
        decision="approve",
        edits={"action": "Run helm upgrade with --timeout 1200s."},
    )
    entry = Memory.objects.get(scope="org")
    assert entry.lesson.action == "Run helm upgrade with --timeout 1200s."
    assert entry.lesson.condition == PROPOSAL["condition"]
