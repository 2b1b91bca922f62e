"""The Content-Security-Policy in a real headless Chromium: every console and admin page a
logged-in user opens (and the Swagger UI) loads with no violation, while an inline script
injected into the page is blocked — so the policy is in force, not merely absent.

Violations are collected by a ``securitypolicyviolation`` listener installed before any page
script runs (Chrome DevTools ``Page.addScriptToEvaluateOnNewDocument``).
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from memory.core.models.memory import Memory
from orgmemory.models import ApprovalItem, OrgFact, WriteAccessRequest
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.persistence.test_admin_scoping import SCOPED_MODELS, _build, _url
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-for-tests-123"
LISTENER = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} `
                    + `at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _wait(browser, condition, timeout=30):
    return browser_wait(browser, condition, timeout)


def _violations(browser) -> list[str]:
    return browser.execute_script("return window.__csp || null")


def _open(browser, url, ready=(By.TAG_NAME, "body")) -> list[str]:
    browser.get(url)
    _wait(browser, ec.presence_of_element_located(ready))
    _wait(browser, lambda b: b.execute_script("return document.readyState") == "complete")
    return _violations(browser)


def _world():
    world = _build("a")
    other = CompanyFactory(name="Company z", slug="company-z")
    world.user.is_superuser = True
    world.user.set_password(PASSWORD)
    world.user.save()
    MembershipFactory(company=other, user=world.user, role="admin")
    return world


def test_console_admin_and_api_docs_pass_the_policy_in_chromium(live_server, browser):
    world = _world()
    base = live_server.url
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": LISTENER})
    seen: dict[str, list[str]] = {}

    # Logged out: Swagger UI renders the schema (its script is a same-origin file), and
    # both login forms.
    _open(browser, f"{base}/api/docs/")
    title = (By.CSS_SELECTOR, ".swagger-ui .info .title")
    _wait(browser, ec.text_to_be_present_in_element(title, "SynthOrg Memory API"), timeout=120)
    seen["/api/docs/"] = _violations(browser)
    seen["/admin/login/"] = _open(browser, f"{base}/admin/login/", (By.ID, "id_username"))
    seen["/console/login"] = _open(browser, f"{base}/console/login", (By.ID, "id_username"))
    browser.find_element(By.ID, "id_username").send_keys(world.user.username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))

    agent = world.objects[Memory].agent
    memory = world.objects[Memory]
    console = [
        "/console/",
        "/console/inbox/",
        "/console/memories/",
        f"/console/memories/agents/{agent.pk}",
        f"/console/memories/agents/{agent.pk}?q=memory",
        f"/console/memories/agents/{agent.pk}/{memory.pk}",
        f"/console/memories/agents/{agent.pk}/{memory.pk}/delete",
        "/console/memories/shared",
        "/console/memories/skill-evolver",
        "/console/agents/",
        f"/console/agents/{agent.pk}",
        "/console/policies/",
        "/console/company/config",
        "/console/facts/",
        f"/console/facts/{OrgFact.objects.filter(company=world.company).first().pk}",
        f"/console/memories/context-preview?agent={agent.pk}&query=memory&token_budget=500",
        "/console/memories/requests",
        f"/console/inbox/write-requests/{world.objects[WriteAccessRequest].pk}",
        f"/dashboard/costs?company={world.company.slug}",
    ]
    item = ApprovalItem.objects.filter(company=world.company).first()
    if item is not None:
        console.append(f"/console/inbox/items/{item.pk}")
    for page in console:
        seen[page] = _open(browser, f"{base}{page}")

    # The cost dashboard lives in the console: its company switcher is the console's.
    switch = browser.find_element(By.ID, "company-switch")
    switch.find_element(By.CSS_SELECTOR, "option[value='company-z']").click()
    browser.find_element(By.CSS_SELECTOR, "form.switcher button[type=submit]").click()
    _wait(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text == "Costs — Company z")
    seen["/dashboard/costs (picker)"] = _violations(browser)

    # The admin: index, every changelist and add form, the built objects' change forms.
    pages = ["/admin/"]
    for model in admin.site._registry:
        pages += [_url(model), f"{_url(model)}add/"]
    pages += [_url(model, world.objects[model]) for model in SCOPED_MODELS]
    for page in pages:
        seen[page] = _open(browser, f"{base}{page}")

    assert {page: found for page, found in seen.items() if found} == {}
    assert all(found == [] for found in seen.values())  # the listener ran on every page

    # The policy is in force: an injected inline script is refused and reported.
    _open(browser, f"{base}/console/inbox/")
    ran = browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.__ran = true';"
        "document.head.appendChild(s); return window.__ran === true;"
    )
    assert ran is False
    assert any(v.startswith("script-src-elem blocked inline") for v in _violations(browser))
