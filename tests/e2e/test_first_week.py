"""A user's first week with no LLM configured, run from outside against the real server.

``manage.py serve`` (web, the default q2 cluster and the LLM cluster under supervisord) is
started on the migrated test database with ``SYNTHORG_LLM_BASE_URL`` empty. The test process
only sets the scene through services (a company, three agents with keys, an operator) and
moves the evolver's schedule to now — the clock, not the product. Everything else goes
through what a user has: the REST API, the MCP endpoint with the official client, and the
console in a headless Chromium. Every deterministic path must deliver: rule lessons,
verbatim conversation memories, a rule-drafted evolver proposal that, once approved, is an
org skill in every agent's context.

Every wait polls the outcome with a generous deadline and asserts the outcome, never the
time it took.
"""

from __future__ import annotations

import os

import httpx
import pytest
from django.core.management import call_command
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from orgmemory.models import ApprovalItem, OrgFact
from persistence.services.agents import agent_create, api_key_issue
from persistence.services.companies import company_create
from tests.persistence.factories import MembershipFactory
from tests.support.browser import browser  # noqa: F401  (a fixture)
from tests.synthorg.test_mcp_server import mcp, structured
from tests.synthorg.test_recovery import (  # noqa: F401  (test_database_url is a fixture)
    serving,
    test_database_url,
    wait_for,
)

DEADLINE_S = 90
PASSWORD = "pw-for-tests-123"
CONFIG = {
    "memory": {
        # rule lessons have confidence 0.6: the threshold lets them count for promotion
        "procedural": {"evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}},
        "extraction": {"debounce_seconds": 0},
    }
}
AGENTS = ("planner", "deployer", "reviewer")
FAILURE = {
    "task_type": "deploy",
    "task_title": "Deploy billing to production",
    "outcome": "partial",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [{"name": "helm_upgrade", "status": "failed"}],
    "retry_count": 2,
    "recovery": "Rolled back, then reran helm upgrade with --timeout 600s and --wait.",
}
CONVERSATION = [
    {"role": "user", "content": "Can you deploy billing v2.14 to staging today?"},
    {"role": "assistant", "content": "Yes: staging deploys run from the release branch."},
    {
        "role": "user",
        "content": "Remember that staging uses the eu-1 cluster and its own database.",
    },
]


def _setup():
    """The scene: what an admin would create before the agents start (services only)."""
    company = company_create(name="First Week", slug="first-week", config=CONFIG)
    keys = {}
    for name in AGENTS:
        agent = agent_create(
            company=company, name=name, role=f"The {name}.", memory_level="persistent"
        )
        keys[name] = api_key_issue(agent=agent, name="e2e").raw_key
    operator = MembershipFactory(company=company, role="operator", user__username="olivia")
    call_command("sync_schedules")
    return company, keys, operator


def _client(base: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def _json(response: httpx.Response, status: int = 200):
    assert response.status_code == status, response.text
    return response.json()


def _store_and_search(base: str, clients: dict[str, httpx.Client], keys: dict[str, str]):
    stored = {}
    for name, client in clients.items():
        content = f"The {name} deploys billing from the release branch on Tuesdays."
        body = _json(
            client.post("/memories", json={"content": content, "category": "semantic"}), 201
        )
        stored[name] = (body["id"], content)
    for name, client in clients.items():
        hits = _json(client.post("/memories/search", json={"query": "when is billing deployed?"}))
        found = {hit["memory"]["id"]: hit["memory"] for hit in hits["results"]}
        # each agent finds its own memory and none of the others' (persistent, private)
        assert stored[name][0] in found, hits
        assert found[stored[name][0]]["content"] == stored[name][1]
        assert {memory["agent_id"] for memory in found.values()} == {
            found[stored[name][0]]["agent_id"]
        }

    # one store through MCP (the official client over streamable HTTP), found through REST
    mcp_content = "The reviewer signs off schema migrations on billing before deploys."

    async def work(session):
        return await session.call_tool("store_memory", {"content": mcp_content, "tags": ["ops"]})

    _initialized, result = mcp(base, keys["reviewer"], work)
    assert not result.is_error, result
    memory_id = structured(result)["id"]
    assert structured(result) == {
        "id": memory_id,
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
    }
    hits = _json(
        clients["reviewer"].post(
            "/memories/search", json={"query": "who signs off schema migrations?"}
        )
    )
    assert hits["results"][0]["memory"]["id"] == memory_id
    assert hits["results"][0]["memory"]["content"] == mcp_content
    assert hits["results"][0]["memory"]["tags"] == ["ops"]


def _report_failures(clients: dict[str, httpx.Client]) -> None:
    reports = {}
    for name, client in clients.items():
        accepted = _json(client.post("/executions", json=FAILURE), 202)
        assert accepted["capture"] == "queued", accepted
        reports[name] = accepted["id"]

    def captured(name):
        def check():
            report = _json(clients[name].get(f"/executions/{reports[name]}"))
            return report if report["capture_status"] not in ("queued", "running") else None

        return check

    for name in clients:
        report = wait_for(captured(name), f"the {name}'s failure report captured", DEADLINE_S)
        assert (report["capture_status"], report["capture_method"]) == ("captured", "rule"), report


def _flush_conversation(client: httpx.Client) -> None:
    flushed = _json(
        client.post("/conversations/onboarding/messages", json={"messages": CONVERSATION}), 202
    )
    assert flushed["stored"] is True, flushed

    def extracted():
        runs = _json(client.get("/conversations/onboarding/extractions"))["results"]
        return [run for run in runs if run["status"] not in ("running",)] or None

    runs = wait_for(extracted, "the conversation's extraction run", DEADLINE_S)
    assert [(run["status"], run["method"]) for run in runs] == [("succeeded", "verbatim")], runs
    hits = _json(client.post("/memories/search", json={"query": "which cluster does staging use?"}))
    contents = [hit["memory"]["content"] for hit in hits["results"]]
    assert "Remember that staging uses the eu-1 cluster and its own database." in contents


def _run_evolver_now(company, django_db_blocker) -> ApprovalItem:
    from django_q.models import Schedule

    with django_db_blocker.unblock():
        [schedule] = Schedule.objects.filter(name__startswith="synthorg:").filter(
            name__contains=f"skill-evolver:company-{company.pk}"
        )
        # the clock, not the product: the daily cycle is due now
        Schedule.objects.filter(pk=schedule.pk).update(next_run=timezone.now())

    def proposed():
        with django_db_blocker.unblock():
            return ApprovalItem.objects.filter(company=company, status="pending").first()

    item = wait_for(proposed, "the evolver's approval item", DEADLINE_S)
    assert item.action_type == "skill_evolver:org_promotion"
    assert item.metadata["method"] == "rule"
    return item


def _approve_in_console(base: str, browser, item: ApprovalItem, operator) -> None:  # noqa: F811
    def wait(condition):
        return WebDriverWait(browser, 30).until(condition)

    browser.get(f"{base}/console/inbox/")
    wait(ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys(operator.user.username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(ec.presence_of_element_located((By.CSS_SELECTOR, "table.stack")))
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.decision")
    assert [row.get_attribute("data-id") for row in rows] == [str(item.pk)]
    browser.find_element(By.LINK_TEXT, item.title).click()
    wait(ec.presence_of_element_located((By.ID, "approve-button"))).click()
    wait(ec.text_to_be_present_in_element((By.ID, "item-status"), "approved"))
    item.refresh_from_db()
    assert (item.status, item.decided_by_id) == ("approved", operator.user.pk)


@pytest.mark.django_db(transaction=True)
def test_first_week_without_an_llm(test_database_url, django_db_blocker, browser):  # noqa: F811
    company, keys, operator = _setup()
    env = dict(
        os.environ,
        DATABASE_URL=test_database_url,
        SYNTHORG_LLM_BASE_URL="",
        Q_WORKERS="1",
        Q_LLM_WORKERS="1",
    )
    env.pop("DATABASE_OWNER_URL", None)
    with serving(env, "--web-workers", "1") as (_serve, port):
        base = f"http://127.0.0.1:{port}"
        clients = {name: _client(base, key) for name, key in keys.items()}
        try:
            health = _json(httpx.get(f"{base}/healthz", timeout=30))
            assert health["checks"]["llm"]["configured"] is False, health

            _store_and_search(base, clients, keys)
            _report_failures(clients)
            _flush_conversation(clients["planner"])
            item = _run_evolver_now(company, django_db_blocker)
            _approve_in_console(base, browser, item, operator)

            with django_db_blocker.unblock():
                [fact] = OrgFact.objects.filter(company=company, category="procedure")
            for name, client in clients.items():
                context = _json(
                    client.post(
                        "/memories/context",
                        json={"query": "deploy billing with helm", "token_budget": 2000},
                    )
                )
                included = {(e["kind"], e["id"]) for e in context["included"]}
                assert ("org_fact", f"fact:{fact.fact_id}") in included, (name, context)
                text = "\n".join(message["content"] for message in context["messages"])
                assert fact.content in text, (name, text)
        finally:
            for client in clients.values():
                client.close()
