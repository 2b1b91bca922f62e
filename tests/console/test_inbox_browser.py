"""The inbox at volume in headless Chromium: page through, filter, edit then approve —
checking the database after the approval (issue 23 item 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select

from orgmemory.approval_models import ApprovalDecision, ApprovalItem
from orgmemory.models import OrgFact
from orgmemory.services.approvals import approval_request
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

PASSWORD = "pw-for-tests-123"

pytestmark = pytest.mark.django_db(transaction=True)


def _wait(browser, condition, timeout=30):
    return browser_wait(browser, condition, timeout)


def _ids(browser) -> list[str]:
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.decision")
    return [r.get_attribute("data-id") for r in rows]


def test_page_filter_and_edit_then_approve(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="operator", user__username="olivia")
    now = timezone.now()
    ApprovalItem.objects.bulk_create(
        ApprovalItem(
            company=company,
            action_type="deploy:staging",
            title=f"staging deploy {k:02d}",
            requested_by="release-bot",
            risk_level="low",
            source="api",
            created_at=now,
            expires_at=now + timedelta(hours=2, minutes=k),
        )
        for k in range(55)
    )
    promotion = approval_request(
        company=company,
        action_type="skill_evolver:org_promotion",
        title="Org skill: pin the package mirror",
        risk_level="high",
        source="skill_evolver",
        requested_by="skill_evolver",
        evidence={"verdict": "PARTIAL", "agents": ["planner"], "report_ids": []},
        metadata={
            "proposal": {
                "discovery": "Package installs fail on the default index.",
                "condition": "pip install fails with a 5xx from the index",
                "action": "retry against the internal mirror",
                "rationale": "The public index throttles CI.",
                "execution_steps": ["Set PIP_INDEX_URL", "Re-run pip install"],
            }
        },
    )
    base = live_server.url
    browser.get(f"{base}/console/inbox/")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username"))).send_keys("olivia")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.ID, "inbox-range")))
    assert browser.find_element(By.ID, "inbox-range").text == "1–50 of 56"
    first = _ids(browser)
    assert len(first) == 50

    # page 2: the 6 rows closest to expiry come last; the promotion (7 days) is the very last
    browser.find_element(By.ID, "page-next").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "inbox-range"), "51–56 of 56"))
    second = _ids(browser)
    assert len(second) == 6 and not set(first) & set(second)
    assert second[-1] == str(promotion.pk)

    # a filter: high risk only (the filters are folded under the list's summary line)
    assert not browser.find_element(By.ID, "id_risk").is_displayed()
    browser.find_element(By.CSS_SELECTOR, "#inbox-filter-panel > summary").click()
    Select(browser.find_element(By.ID, "id_risk")).select_by_value("high")
    browser.find_element(By.CSS_SELECTOR, "#inbox-filters button[type=submit]").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "inbox-range"), "1–1 of 1"))
    assert _ids(browser) == [str(promotion.pk)]
    # an applied filter keeps the panel open and says so
    panel = browser.find_element(By.ID, "inbox-filter-panel")
    assert panel.get_attribute("open") is not None and "(filters applied)" in panel.text

    # edit then approve
    browser.find_element(By.LINK_TEXT, promotion.title).click()
    action = _wait(browser, ec.presence_of_element_located((By.ID, "edit-action")))
    assert "Adds a skill beside the existing ones" in browser.find_element(By.ID, "verdict").text
    action.clear()
    action.send_keys("retry against the internal mirror with --retries 3")
    browser.find_element(By.ID, "approve-button").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "item-status"), "approved"))
    fact = OrgFact.objects.get(company=company)
    assert "Do: retry against the internal mirror with --retries 3" in fact.content
    record = ApprovalDecision.objects.get(item=promotion)
    assert list(record.edits["fields"]) == ["action"]
    assert "+retry against the internal mirror with --retries 3" in (
        browser.find_element(By.CSS_SELECTOR, "pre.diff").text
    )
