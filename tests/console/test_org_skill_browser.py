"""The skill evolver page's *Add org skill* form in headless Chromium: an operator types a
skill under the console's CSP (no inline script or style), sees the service's field error next
to the field, corrects it, and the published skill is listed."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memory.procedural.skills import org_skills
from tests.console.test_browser import PASSWORD
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)

TYPED = {
    "id_discovery": "A timed-out helm upgrade is rolled back first.",
    "id_condition": "helm_upgrade times out",
    "id_action": "roll back, then retry with a 600 s timeout",
    "id_rationale": "A half-applied release blocks the next upgrade.",
    "id_steps": "helm rollback\nhelm upgrade --timeout 600s",
    "id_avoid": "retry the upgrade unchanged",
    "id_tool": "helm_upgrade",
    "id_name": "Helm Rollback",  # not a slug: the service refuses it
}


def _submit(browser):
    button = browser.find_element(By.ID, "add-skill-button")
    button.click()
    # the page the click leaves goes stale first
    browser_wait(browser, ec.staleness_of(button))


def test_operator_adds_an_org_skill_and_sees_it_listed(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="operator", user__username="olu")
    browser.get(f"{live_server.url}/console/memories/skill-evolver")
    browser_wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("olu")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(browser, ec.presence_of_element_located((By.ID, "org-skill-form")))
    for field, text in TYPED.items():
        browser.find_element(By.ID, field).send_keys(text)
    _submit(browser)

    error = browser_wait(
        browser,
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#skill-field-name .field-error")),
    )
    assert error.text == "String should match pattern '^[a-z0-9][a-z0-9-]{0,63}$'"
    assert org_skills(company=company).count() == 0
    # what was typed is kept: only the name needs changing
    name = browser.find_element(By.ID, "id_name")
    assert name.get_attribute("value") == "Helm Rollback"
    name.clear()
    name.send_keys("helm-rollback")
    _submit(browser)

    message = browser_wait(
        browser, ec.visibility_of_element_located((By.CSS_SELECTOR, ".message.success"))
    )
    assert message.text.startswith("Org skill helm-rollback published")
    skill = org_skills(company=company).get()
    row = browser.find_element(By.ID, f"org-skill-{skill.pk}")
    assert "helm-rollback" in row.text and "helm_upgrade times out" in row.text
    assert (skill.steps, skill.source) == (
        ["helm rollback", "helm upgrade --timeout 600s"],
        "operator",
    )
    csp_errors = [
        entry
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry.get("message", "")
    ]
    assert csp_errors == []
