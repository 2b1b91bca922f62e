"""The steps of a user's first week, shared by the scenario tests in this package.

Each test starts ``manage.py serve`` (web, the default q2 cluster and the LLM cluster under
supervisord) on the migrated test database, sets the scene through services (a company,
three agents with keys, an operator) and then acts only as users do: the REST API, the MCP
endpoint with the official client, and the console in a headless Chromium. Moving a
schedule's due time to now is the clock, not the product.

Every wait polls the outcome with a generous deadline and asserts the outcome, never the
time it took.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx
from django.core.management import call_command
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from orgmemory.models import ApprovalItem, OrgFact
from persistence.services.agents import agent_create, api_key_issue
from persistence.services.companies import company_create
from tests.persistence.factories import MembershipFactory
from tests.support.browser import browser_wait
from tests.support.context_checks import context_problems
from tests.synthorg.test_mcp_server import mcp, structured
from tests.synthorg.test_recovery import wait_for

DEADLINE_S = 90
PASSWORD = "pw-for-tests-123"
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
FINISHED = ("queued", "running")


def setup_company(config: dict):
    """The scene: what an admin would create before the agents start (services only)."""
    company = company_create(name="First Week", slug="first-week", config=config)
    keys = {}
    for name in AGENTS:
        agent = agent_create(
            company=company, name=name, role=f"The {name}.", memory_level="persistent"
        )
        keys[name] = api_key_issue(agent=agent, name="e2e").raw_key
    operator = MembershipFactory(company=company, role="operator", user__username="olivia")
    call_command("sync_schedules")
    return company, keys, operator


def serve_env(test_database_url: str, *, llm_base_url: str = "", **extra: str) -> dict:
    """``manage.py serve``'s environment: the test database, one worker per cluster."""
    env = dict(
        os.environ,
        DATABASE_URL=test_database_url,
        SYNTHORG_LLM_BASE_URL=llm_base_url,
        Q_WORKERS="1",
        Q_LLM_WORKERS="1",
        **extra,
    )
    env.pop("DATABASE_OWNER_URL", None)
    for name in ("SYNTHORG_LLM_MODEL", "SYNTHORG_LLM_API_KEY"):
        env.pop(name, None)  # a user sets the base URL only; the model is discovered
    return env


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


def ok(response: httpx.Response, status: int = 200):
    assert response.status_code == status, response.text
    return response.json()


def store_and_search(base: str, clients: dict[str, httpx.Client], keys: dict[str, str]):
    """Each agent stores a memory and finds only its own; the reviewer stores one over MCP
    and finds it over REST. Returns each agent's stored memory ids."""
    stored = {}
    for name, agent in clients.items():
        content = f"The {name} deploys billing from the release branch on Tuesdays."
        body = ok(agent.post("/memories", json={"content": content, "category": "semantic"}), 201)
        stored[name] = (body["id"], content)
    for name, agent in clients.items():
        hits = ok(agent.post("/memories/search", json={"query": "when is billing deployed?"}))
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
    hits = ok(
        clients["reviewer"].post(
            "/memories/search", json={"query": "who signs off schema migrations?"}
        )
    )
    assert hits["results"][0]["memory"]["id"] == memory_id
    assert hits["results"][0]["memory"]["content"] == mcp_content
    assert hits["results"][0]["memory"]["tags"] == ["ops"]
    owned = {name: [stored[name][0]] for name in clients}
    owned["reviewer"].append(memory_id)
    return owned


def post_reports(agents: dict[str, httpx.Client], reports: list[tuple[str, dict]]) -> list:
    """Post each ``(agent name, report)``: every one acknowledged (202, capture queued).
    Returns ``(agent name, report id)`` pairs."""
    posted = []
    for name, report in reports:
        accepted = ok(agents[name].post("/executions", json=report), 202)
        assert accepted["capture"] == "queued", accepted
        posted.append((name, accepted["id"]))
    return posted


def wait_for_reports(
    agents: dict[str, httpx.Client], posted: list, done: Callable[[dict], bool], what: str
) -> list[dict]:
    """Poll each posted report over REST until ``done(report)``; returns the reports."""

    def check(name, report_id):
        def poll():
            report = ok(agents[name].get(f"/executions/{report_id}"))
            return report if done(report) else None

        return poll

    return [
        wait_for(check(name, report_id), f"the {name}'s report {what}", DEADLINE_S)
        for name, report_id in posted
    ]


def report_failures(agents: dict[str, httpx.Client], method: str) -> list:
    """Every agent reports :data:`FAILURE`; each capture ends ``captured`` by ``method``."""
    posted = post_reports(agents, [(name, FAILURE) for name in agents])
    reports = wait_for_reports(
        agents, posted, lambda r: r["capture_status"] not in FINISHED, "captured"
    )
    for report in reports:
        assert (report["capture_status"], report["capture_method"]) == ("captured", method), report
    return posted


def flush_conversation(agent: httpx.Client, messages: list[dict], name: str = "onboarding"):
    flushed = ok(agent.post(f"/conversations/{name}/messages", json={"messages": messages}), 202)
    assert flushed["stored"] is True, flushed


def wait_for_runs(
    agent: httpx.Client, done: Callable[[list[dict]], bool], what: str, name="onboarding"
):
    """Poll the conversation's extraction runs (newest first) until ``done(runs)``."""

    def poll():
        runs = ok(agent.get(f"/conversations/{name}/extractions"))["results"]
        return runs if done(runs) else None

    return wait_for(poll, what, DEADLINE_S)


def conversation(agent: httpx.Client, name: str = "onboarding") -> dict:
    [found] = [
        c for c in ok(agent.get("/conversations"))["results"] if c["conversation_id"] == name
    ]
    return found


def search_contents(agent: httpx.Client, query: str) -> list[str]:
    hits = ok(agent.post("/memories/search", json={"query": query}))
    return [hit["memory"]["content"] for hit in hits["results"]]


def make_due_now(django_db_blocker, *names: str) -> None:
    """The clock, not the product: the named q2 schedules are due now."""
    from django_q.models import Schedule

    with django_db_blocker.unblock():
        for name in names:
            assert Schedule.objects.filter(name=name).update(next_run=timezone.now()) == 1, name


def assert_searches_logged(company, django_db_blocker, expected: dict[str, list[str]]) -> None:
    """The served app (gunicorn + uvicorn) wrote each agent's request-log rows after sending
    its responses: exactly the searches it made, by agent name (newest first)."""
    from memory.core.models.request_log import RequestLogEntry

    def logged():
        with django_db_blocker.unblock():
            rows = RequestLogEntry.objects.filter(company=company, kind="search")
            by_agent: dict[str, list[str]] = {}
            for name, query in rows.order_by("-created_at", "-id").values_list(
                "agent__name", "query"
            ):
                by_agent.setdefault(name, []).append(query)
        return by_agent if by_agent == expected else None

    wait_for(logged, "the request log of the searches", DEADLINE_S)


def evolver_schedule(company) -> str:
    return f"synthorg:skill-evolver:company-{company.pk}"


def job_schedule(kind: str) -> str:
    """The job kernel's every-minute dispatch schedule of job kind ``kind``."""
    return f"synthorg:jobs-{kind}"


def wait_for_approval_item(company, django_db_blocker) -> ApprovalItem:
    def proposed():
        with django_db_blocker.unblock():
            return ApprovalItem.objects.filter(company=company, status="pending").first()

    item = wait_for(proposed, "the evolver's approval item", DEADLINE_S)
    assert item.action_type == "skill_evolver:org_promotion"
    return item


def approve_in_console(base: str, browser, item: ApprovalItem, operator) -> None:
    def wait(condition):
        return browser_wait(browser, condition)

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


def assert_org_skill_in_every_context(company, agents: dict[str, httpx.Client], blocker) -> None:
    """The approved skill reaches every agent, and every agent's context reads well
    (:func:`tests.support.context_checks.context_problems`)."""
    with blocker.unblock():
        [fact] = OrgFact.objects.filter(company=company, category="procedure")
    for name, agent in agents.items():
        context = ok(
            agent.post(
                "/memories/context",
                json={"query": "deploy billing with helm", "token_budget": 2000},
            )
        )
        included = {(e["kind"], e["id"]) for e in context["included"]}
        assert ("org_fact", f"fact:{fact.fact_id}") in included, (name, context)
        text = "\n".join(message["content"] for message in context["messages"])
        assert fact.content in text, (name, text)
        # what it says is right: no contradicting pair, no internal id, no cut word
        with blocker.unblock():
            assert context_problems(context["included"], context["messages"]) == [], name
