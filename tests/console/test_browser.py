"""The operator console in a real headless Chromium: log in, open the inbox, approve one
item, fail to reject without a reason, reject another with one, delete a memory — checking
the database after each step. Screenshots land in ``$SYNTHORG_SCREENSHOTS`` (default
``var/screenshots/console/``, untracked); ``make screenshots`` refreshes the ones the docs
show in docs/images/console/ (with ``test_screenshots.py``, which shoots every page)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store
from orgmemory.models import ApprovalItem
from orgmemory.services.approvals import approval_decide, approval_request
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(
    os.environ.get("SYNTHORG_SCREENSHOTS") or ROOT / "var" / "screenshots" / "console"
)
PASSWORD = "pw-for-tests-123"

pytestmark = pytest.mark.django_db(transaction=True)


def _wait(browser, condition, timeout=30):
    return browser_wait(browser, condition, timeout)


def _shot(browser, name: str, width: int = 1280) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, min(max(height + 140, 700), 2400))
    path = SCREENSHOTS / name
    assert browser.save_screenshot(str(path)), path
    browser.set_window_size(1280, 1000)
    return path


def _seed():
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    membership = MembershipFactory(company=company, role="operator", user__username="olivia")
    agents = [AgentFactory(company=company, name=n) for n in ("planner", "coder", "reviewer")]
    promotion = approval_request(
        company=company,
        action_type="skill_evolver:org_promotion",
        title="Org skill: retry flaky package installs with a pinned mirror",
        description="3 agents hit the same failure; proposed as an org-wide procedure.",
        risk_level="medium",
        source="skill_evolver",
        requested_by="skill_evolver",
        evidence={
            "pattern": "failure:dependency_install",
            "agents": [a.name for a in agents],
            "report_ids": ["r-101", "r-102", "r-117", "r-131"],
            "failure_rate": 0.86,
            "confidence": 0.86,
            "verdict": "FULL",
            "superseded": {
                "fact_id": "5c1d0a7e-0000-4000-8000-000000000001",
                "content": "When pip install fails, retry the install once.",
            },
        },
        metadata={
            "proposal": {
                "discovery": "Package installs fail on the default index; use the mirror.",
                "condition": "When pip install fails with a timeout or a 5xx from the index",
                "action": "Retry against the pinned internal mirror with --retries 3",
                "rationale": "The public index throttles CI; the mirror does not.",
                "execution_steps": [
                    "Set PIP_INDEX_URL to the internal mirror",
                    "Re-run pip install with --retries 3",
                    "Report the original failure in the task log",
                ],
                "content": "When pip install fails with a timeout or a 5xx from the index, "
                "retry against the pinned internal mirror with --retries 3.",
            }
        },
    )
    risky = approval_request(
        company=company,
        action_type="deploy:production",
        title="Deploy billing v2 on Friday evening",
        description="The release bot wants to ship the new invoice renderer.",
        risk_level="high",
        source="api",
        requester_agent=agents[1],
    )
    memory_id = memory_store(
        agent=agents[0],
        request=MemoryStoreRequest(
            content="The CFO's personal phone number is 555-0100.", category="semantic"
        ),
    ).id
    memory_store(
        agent=agents[0],
        request=MemoryStoreRequest(
            content="Billing deploys every Friday at noon UTC.", category="semantic"
        ),
    )
    return company, membership, agents, promotion, risky, memory_id


def test_operator_console_flow(live_server, browser):
    company, membership, agents, promotion, risky, memory_id = _seed()
    base = live_server.url

    # log in
    browser.get(f"{base}/console/inbox/")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    assert "/console/login" in browser.current_url
    browser.find_element(By.ID, "id_username").send_keys("olivia")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "table.stack")))
    assert browser.current_url == f"{base}/console/inbox/"

    # the inbox: both pending, closest to expiry first (the deploy: 1 day; the promotion: 7)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.decision")
    assert [r.get_attribute("data-id") for r in rows] == [str(risky.pk), str(promotion.pk)]
    assert "2 pending" in browser.find_element(By.CSS_SELECTOR, ".counts").text
    _shot(browser, "inbox.png")
    _shot(browser, "inbox_phone.png", width=390)

    # open the promotion: tiers, evidence, the superseded entry next to the new text
    browser.find_element(By.LINK_TEXT, promotion.title).click()
    _wait(browser, ec.presence_of_element_located((By.ID, "approve-button")))
    assert (
        "When pip install fails, retry the install once."
        in browser.find_element(By.ID, "superseded-text").text
    )
    assert "pinned internal mirror" in browser.find_element(By.ID, "proposed-text").text
    _shot(browser, "detail.png")
    browser.find_element(By.ID, "approve-button").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "item-status"), "approved"))
    promotion.refresh_from_db()
    assert (promotion.status, promotion.decided_by_id) == ("approved", membership.user.pk)
    assert "Approved: " in browser.find_element(By.CSS_SELECTOR, ".messages").text

    # reject the risky deploy: first without a reason (refused), then with one
    browser.get(f"{base}/console/inbox/items/{risky.pk}")
    _wait(browser, ec.presence_of_element_located((By.ID, "reject-button"))).click()
    error = _wait(browser, ec.presence_of_element_located((By.ID, "reason-error")))
    assert error.text == "A reason is required to reject an item."
    risky.refresh_from_db()
    assert (risky.status, risky.decision_reason) == ("pending", "")
    _shot(browser, "reject_without_reason.png")
    browser.find_element(By.ID, "reason").send_keys("No production deploys on Friday evening.")
    browser.find_element(By.ID, "reject-button").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "item-status"), "rejected"))
    risky.refresh_from_db()
    assert (risky.status, risky.decision_reason, risky.decided_by_id) == (
        "rejected",
        "No production deploys on Friday evening.",
        membership.user.pk,
    )

    # a concurrent decision: someone else approves while the page is open → a clear 409 message
    race = approval_request(
        company=company,
        action_type="keys:rotate",
        title="Rotate the billing API keys",
        risk_level="low",
        source="api",
        requested_by="security-bot",
    )
    browser.get(f"{base}/console/inbox/items/{race.pk}")
    _wait(browser, ec.presence_of_element_located((By.ID, "approve-button")))
    other = MembershipFactory(company=company, role="admin", user__password=None)
    approval_decide(
        company=company,
        actor=Principal.for_human(other.user, company, "admin"),
        item_id=race.pk,
        decision="approve",
    )
    browser.find_element(By.ID, "reason").send_keys("Not during the freeze.")
    browser.find_element(By.ID, "reject-button").click()
    message = _wait(browser, ec.presence_of_element_located((By.ID, "decision-error")))
    assert message.text == "Someone else decided first. This item was already approved."
    race.refresh_from_db()
    assert (race.status, race.decided_by_id, race.decision_reason) == (
        "approved",
        other.user.pk,
        "",
    )
    assert ApprovalItem.objects.filter(status="pending").count() == 0

    # memory browser: open the planner's personal-data memory and delete it with a reason
    browser.find_element(By.XPATH, "//details[@class='menu']/summary[.='Agents']").click()
    browser.find_element(By.LINK_TEXT, "Memories").click()
    _wait(browser, ec.presence_of_element_located((By.LINK_TEXT, "planner"))).click()
    _wait(browser, ec.presence_of_element_located((By.ID, "q"))).send_keys("CFO phone number")
    browser.find_element(By.CSS_SELECTOR, "form.search button[type=submit]").click()
    # the results page (its URL carries the query), not the list it replaces: a link found
    # on the old page goes stale when the results arrive
    _wait(browser, ec.url_contains("q=CFO"))
    _wait(browser, lambda b: b.execute_script("return document.readyState") == "complete")
    link = _wait(browser, ec.presence_of_element_located((By.PARTIAL_LINK_TEXT, "CFO")))
    _shot(browser, "memory_search.png")
    link.click()
    _wait(browser, ec.presence_of_element_located((By.ID, "delete-link"))).click()
    _wait(browser, ec.presence_of_element_located((By.ID, "delete-reason"))).send_keys(
        "Personal data"
    )
    browser.find_element(By.ID, "confirm-delete").click()
    _wait(browser, ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".messages"), "deleted"))
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert Memory.objects.filter(agent=agents[0]).count() == 1
    entry = AuditEntry.objects.get(action_type="memory.deleted", target_id=str(memory_id))
    assert (entry.actor_user_id, entry.details["reason"]) == (membership.user.pk, "Personal data")
