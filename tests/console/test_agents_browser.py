"""Keys and memory deletion in headless Chromium under the console's CSP: a created key is
shown once and its copy button (a static script, no inline code) puts it on the clipboard;
deleting a memory goes through the confirmation page."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memory.core.models.memory import Memory
from persistence.models import AgentApiKey, AuditEntry
from persistence.selectors.identity import agent_for_api_key
from tests.console.test_browser import PASSWORD
from tests.console.test_csp import LISTENER
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)


def _wait(browser, condition):
    return browser_wait(browser, condition)


def _login(browser, base, path, username):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": LISTENER})
    browser.get(f"{base}{path}")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def _violations(browser) -> list[str]:
    return browser.execute_script("return window.__csp")


def test_admin_creates_a_key_shown_once_and_copies_it(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="admin", user__username="ada")
    agent = AgentFactory(company=company, name="billing-bot")
    base = live_server.url
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    _login(browser, base, f"/console/agents/{agent.pk}", "ada")
    _wait(browser, ec.presence_of_element_located((By.ID, "create-key")))
    browser.find_element(By.ID, "id_name").send_keys("ci-runner")
    browser.find_element(By.ID, "create-key").click()
    _wait(browser, ec.presence_of_element_located((By.ID, "copy-key")))
    raw = browser.find_element(By.ID, "raw-key").get_attribute("value")
    browser.find_element(By.ID, "copy-key").click()
    _wait(browser, ec.text_to_be_present_in_element((By.ID, "copy-status"), "Copied."))
    clipboard = browser.execute_async_script(
        "const done = arguments[0];"
        "navigator.clipboard.readText().then(done, (e) => done(String(e)));"
    )
    assert clipboard == raw
    assert _violations(browser) == []
    key = AgentApiKey.objects.get(agent=agent)
    assert key.name == "ci-runner" and agent_for_api_key(raw).key.pk == key.pk
    # Back on the agent page, only the prefix is shown.
    browser.get(f"{base}/console/agents/{agent.pk}")
    _wait(browser, ec.presence_of_element_located((By.ID, f"key-{key.pk}")))
    assert raw not in browser.page_source and f"sok_{key.prefix}_" in browser.page_source
    assert _violations(browser) == []


def test_operator_deletes_a_memory_after_confirming(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="operator", user__username="otto")
    memory = MemoryFactory(
        agent=AgentFactory(company=company, name="billing-bot"), content="Home: 12 Elm Street."
    )
    base = live_server.url
    _login(browser, base, f"/console/memories/agents/{memory.agent_id}/{memory.pk}", "otto")
    _wait(browser, ec.presence_of_element_located((By.ID, "delete-link"))).click()
    _wait(browser, ec.presence_of_element_located((By.ID, "confirm-delete")))
    assert Memory.objects.filter(pk=memory.pk).exists()
    browser.find_element(By.ID, "confirm-delete").click()  # no reason: refused, said on top
    _wait(browser, ec.presence_of_element_located((By.ID, "form-errors")))
    assert Memory.objects.filter(pk=memory.pk).exists()
    browser.find_element(By.ID, "delete-reason").send_keys("personal data")
    browser.find_element(By.ID, "confirm-delete").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, ".message.success")))
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert AuditEntry.objects.get(action_type="memory.deleted").details["reason"] == "personal data"
    assert _violations(browser) == []
