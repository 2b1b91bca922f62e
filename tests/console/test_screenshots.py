"""Every console page in a real headless Chromium, as an operator of one company: each
loads with no Content-Security-Policy violation, the context preview shows included and
dropped entries, and each page's screenshot is written to ``$SYNTHORG_SCREENSHOTS``
(``make screenshots`` sets ``docs/images/console``, the pictures the docs show)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memory.core.domain import MemoryStoreRequest
from memory.core.retrieval.query import MemoryQuery
from memory.core.services.store import memory_store
from memory.interfaces.service import MemoryService
from memory.prompting.context import ContextRequest
from orgmemory.services.policies import policy_add
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.console.test_browser import PASSWORD, _seed, _shot, _wait
from tests.console.test_csp import LISTENER, _violations
from tests.persistence.factories import CostRecordFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)

LESSONS = [
    "Billing deploys need the release checklist signed by the on-call engineer first.",
    "Billing rollbacks use the previous container tag; never rebuild during an incident.",
    "Billing invoices are rendered by the v2 renderer since March; v1 is read-only.",
    "Billing staging is reset every Monday at 06:00 UTC; do not store fixtures there.",
]


def _world():
    company, _membership, agents, promotion, _risky, memory_id = _seed()
    planner = agents[0]
    admin = MembershipFactory(company=company, role="admin", user__username="ada")
    for text in ("Never push to main.", "Rollbacks need the on-call engineer's approval."):
        policy_add(
            company=company,
            actor=Principal.for_human(admin.user, company, "admin"),
            content=text,
        )
    for text in LESSONS:
        memory_store(agent=planner, request=MemoryStoreRequest(content=text, category="semantic"))
    service = MemoryService(Principal.for_agent(planner), via="mcp")
    service.search(MemoryQuery(text="billing rollback"))
    service.context(ContextRequest.build(query_text="prepare the billing deploy", token_budget=400))
    MemoryService(Principal.for_agent(agents[1])).search(MemoryQuery(text="staging reset"))
    now = timezone.now()
    for agent, cost in ((planner, "0.0021"), (agents[1], "1.35"), (agents[2], "0.42")):
        CostRecordFactory(company=company, agent=agent, cost=Decimal(cost), occurred_at=now)
    return company, agents, promotion, memory_id


def test_every_console_page(live_server, browser):
    company, agents, promotion, memory_id = _world()
    planner = agents[0]
    base = live_server.url
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": LISTENER})
    browser.get(f"{base}/console/login")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("olivia")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))

    preview = (
        f"/console/memories/context-preview?agent={planner.pk}"
        "&query=prepare+the+billing+deploy&token_budget=120&include_org=on"
    )
    pages = {
        "inbox.png": "/console/inbox/",
        "detail.png": f"/console/inbox/items/{promotion.pk}",
        "policies.png": "/console/policies/",
        "agents.png": "/console/memories/",
        "memory_list.png": f"/console/memories/agents/{planner.pk}",
        "memory_search.png": f"/console/memories/agents/{planner.pk}?q=billing+rollback",
        "memory_detail.png": f"/console/memories/agents/{planner.pk}/{memory_id}",
        "context_preview.png": preview,
        "request_log.png": "/console/memories/requests",
        "skill_evolver.png": "/console/memories/skill-evolver",
        "executions.png": "/console/memories/executions",
        "costs.png": f"/dashboard/costs?company={company.slug}",
        "agent_page.png": f"/console/agents/{planner.pk}",
        "org_facts.png": "/console/facts/",
        "shared.png": "/console/memories/shared",
        "fine_tune.png": "/console/memories/fine-tune",
    }
    seen = {}
    for name, page in pages.items():
        browser.get(f"{base}{page}")
        _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "main h1")))
        seen[page] = _violations(browser)
        if page == preview:
            included = browser.find_elements(
                By.CSS_SELECTOR, "table[aria-label='Included entries'] tr.context-entry"
            )
            dropped = browser.find_elements(
                By.CSS_SELECTOR, "table[aria-label='Dropped entries'] tr.context-entry"
            )
            assert included and dropped
            assert "Billing" in included[0].text
        if name == "request_log.png":
            rows = browser.find_elements(By.CSS_SELECTOR, "tr.request-row")
            assert [r.find_element(By.CSS_SELECTOR, "td[data-label=Query]").text for r in rows] == [
                "staging reset",
                "prepare the billing deploy",
                "billing rollback",
            ]
        if name == "costs.png":
            assert "0.0021" in browser.find_element(By.TAG_NAME, "main").text
        _shot(browser, name)
    browser.get(f"{base}/console/inbox/")
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "main h1")))
    _shot(browser, "inbox_phone.png", width=390)
    assert {page: found for page, found in seen.items() if found} == {}
    assert all(found == [] for found in seen.values())


def test_configuration_page_as_admin(live_server, browser):
    company, *_ = _world()
    # two fields off their defaults: marked, their sections open, the others folded
    company_config_set(
        company=company,
        data={"memory": {"retrieval": {"rrf_k": 30}, "dream": {"max_core_tokens": 800}}},
    )
    base = live_server.url
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": LISTENER})
    browser.get(f"{base}/console/login")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("ada")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))
    browser.get(f"{base}/console/company/config")
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, ".rjf-collapsed")))
    assert len(browser.find_elements(By.CSS_SELECTOR, ".rjf-form-row.cfg-changed")) == 2
    assert _violations(browser) == []
    _shot(browser, "config.png")
