"""The Core policies page in headless Chromium: an admin adds and reorders a policy under
the console's CSP (no inline script), then the block shown is the one agents receive."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from orgmemory.models import OrgFact
from orgmemory.selectors.policies import CORE_POLICIES_HEADER, core_policy_block
from tests.console.test_browser import PASSWORD
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)


def _wait(browser, condition):
    return browser_wait(browser, condition)


def test_admin_adds_and_reorders_core_policies(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="admin", user__username="ada")
    base = live_server.url
    browser.get(f"{base}/console/policies/")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("ada")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.ID, "add-button")))
    for text in ("No commits to main", "PRs need 2 approvals"):
        browser.find_element(By.ID, "new-content").send_keys(text)
        button = browser.find_element(By.ID, "add-button")
        button.click()
        # the page the click leaves goes stale first: a success message still on it (the
        # previous add's) would otherwise satisfy the wait before the new page is there
        _wait(browser, ec.staleness_of(button))
        _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, ".message.success")))
    # Move the second policy up.
    browser.find_element(By.CSS_SELECTOR, "#policy-2 button[name=action][value=up]").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "policy-block"), "approvals\n- No"))
    expected = CORE_POLICIES_HEADER + "\n- PRs need 2 approvals\n- No commits to main"
    assert browser.find_element(By.ID, "policy-block").text == expected
    assert core_policy_block(company=company) == expected
    assert [f.position for f in OrgFact.objects.order_by("created_at")] == [1, 0]
    errors = [
        entry
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry.get("message", "")
    ]
    assert errors == []
