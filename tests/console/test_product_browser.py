"""The console as a product, in headless Chromium at 1280 px (issue 33 item 3): the
navigation fits one line and opens its grouped menus; the inbox shows its pending item above
the fold at 1280×800 with the filters folded; a destructive action asks first; and an empty
company's every list page says so in words — no header-only table, no empty chart."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from orgmemory.models import OrgFact
from orgmemory.services.approvals import approval_request
from orgmemory.services.policies import policy_add
from persistence.principal import Principal
from tests.console.test_browser import PASSWORD
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    CostRecordFactory,
    MembershipFactory,
)
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)

# every console page that lists something, as an empty company shows it
LIST_PAGES = {
    "/console/inbox/": "no decision is waiting for you",
    "/console/policies/": "No core policies yet.",
    "/console/facts/": "No live facts.",
    "/console/memories/shared": "No shared knowledge.",
    "/console/memories/": "This company has no agents yet.",
    "/console/agents/": "This company has no agents yet.",
    "/console/memories/requests": "No calls recorded.",
    "/console/memories/skill-evolver": "No evolver cycle has run for this company yet.",
    "/console/memories/executions": "No execution report yet.",
    "/console/memories/fine-tune": "No fine-tune run yet.",
    "/console/failures": "No failed jobs in this company.",
    "/dashboard/costs": "No costs recorded in this period",
}


def _login(browser, base, username):
    browser.set_window_size(1280, 800)
    browser.get(f"{base}/console/login")
    browser_wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))


def _one_line_topbar(browser) -> dict:
    """The top of every item of the top bar (brand, nav entries, session), and its height."""
    return browser.execute_script(
        """
        const bar = document.querySelector('header.topbar');
        const items = [bar.querySelector('.brand'), ...bar.querySelectorAll('nav ul.menus > li'),
                       bar.querySelector('.session')];
        return {height: bar.getBoundingClientRect().height,
                tops: items.map(el => Math.round(el.getBoundingClientRect().top)),
                width: document.documentElement.scrollWidth};
        """
    )


def test_navigation_inbox_above_the_fold_and_confirmed_retire(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    CompanyFactory(name="Aardvark Labs", slug="aardvark")  # another company, not hers
    admin = MembershipFactory(company=company, role="admin", user__username="ada")
    AgentFactory(company=company, name="coder")
    item = approval_request(
        company=company,
        action_type="deploy:production",
        title="Deploy billing v2 on Friday evening",
        risk_level="high",
        source="api",
        requested_by="coder",
    )
    policy_add(
        company=company,
        actor=Principal.for_human(admin.user, company, "admin"),
        content="Never push to main.",
    )
    base = live_server.url
    _login(browser, base, "ada")
    assert browser.execute_script("return window.innerWidth") == 1280

    # The navigation: one line at 1280 px (every item at the same top, no wrapped row).
    bar = _one_line_topbar(browser)
    assert len(set(bar["tops"])) == 1, bar
    assert bar["height"] < 60 and bar["width"] <= 1280, bar
    # grouped: a section's pages are in its menu, shown when it opens
    memories = browser.find_element(By.CSS_SELECTOR, "nav a[href='/console/memories/']")
    assert not memories.is_displayed()
    browser.find_element(By.XPATH, "//details[@class='menu']/summary[.='Agents']").click()
    browser_wait(browser, lambda b: memories.is_displayed())
    assert _one_line_topbar(browser)["tops"] == bar["tops"]  # an open menu does not push
    browser.find_element(By.XPATH, "//details[@class='menu']/summary[.='Learning']").click()
    assert not memories.is_displayed()  # one menu open at a time

    # The inbox at 1280×800: the pending item is above the fold; the filters are folded.
    browser.get(f"{base}/console/inbox/")
    row = browser_wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "tr.decision")))
    assert row.get_attribute("data-id") == str(item.pk)
    bottom = browser.execute_script("return arguments[0].getBoundingClientRect().bottom", row)
    fold = browser.execute_script("return window.innerHeight")
    assert fold <= 800 and bottom <= fold, (bottom, fold)
    assert not browser.find_element(By.ID, "id_risk").is_displayed()
    assert browser.find_element(By.ID, "inbox-filter-panel").get_attribute("open") is None

    # Retiring a policy asks first: dismissed, the policy stays; accepted, it is retired.
    browser.find_element(By.XPATH, "//details[@class='menu']/summary[.='Organisation']").click()
    browser.find_element(By.LINK_TEXT, "Core policies").click()
    retire = browser_wait(
        browser, ec.element_to_be_clickable((By.CSS_SELECTOR, "button[value=retire]"))
    )
    # the policies lead the page: the list comes before what agents receive
    assert browser.execute_script(
        "return document.getElementById('policy-list').getBoundingClientRect().top"
        " < document.getElementById('block-h').getBoundingClientRect().top"
    )
    retire.click()
    alert = browser_wait(browser, ec.alert_is_present())
    assert alert.text.startswith("Retire this core policy?")
    alert.dismiss()
    assert OrgFact.objects.get(company=company, category="core_policy").retracted_at is None
    browser.find_element(By.CSS_SELECTOR, "button[value=retire]").click()
    browser_wait(browser, ec.alert_is_present()).accept()
    browser_wait(browser, ec.presence_of_element_located((By.ID, "policy-list-empty")))
    assert OrgFact.objects.get(company=company, category="core_policy").retracted_at is not None


def _tables_without_rows(browser) -> list[str]:
    return browser.execute_script(
        """
        return [...document.querySelectorAll('main table')]
          .filter(t => !t.querySelector('tbody tr'))
          .map(t => t.getAttribute('aria-label') || t.id || 'table');
        """
    )


def test_every_empty_state(live_server, browser):
    company = CompanyFactory(name="Empty Co", slug="empty")
    MembershipFactory(company=company, role="admin", user__username="ada")
    base = live_server.url
    _login(browser, base, "ada")
    for path, message in LIST_PAGES.items():
        browser.get(f"{base}{path}")
        main = browser_wait(browser, ec.presence_of_element_located((By.ID, "main")))
        assert message in main.text, path
        assert _tables_without_rows(browser) == [], path
        assert browser.find_elements(By.CSS_SELECTOR, "main svg.chart") == [], path

    # Calls recorded at no cost (a local model): a sentence, not a chart of zeros nor a
    # table of headers.
    agent = AgentFactory(company=company, name="planner")
    CostRecordFactory(company=company, agent=agent, cost=Decimal("0"), occurred_at=timezone.now())
    browser.get(f"{base}/dashboard/costs")
    empty = browser_wait(browser, ec.presence_of_element_located((By.ID, "costs-per-agent-empty")))
    assert "The 1 call in this period cost nothing" in empty.text
    assert _tables_without_rows(browser) == []
    assert browser.find_elements(By.CSS_SELECTOR, "main svg") == []

    # The wiki export is off: no link to it; its address answers a styled page.
    browser.get(f"{base}/console/memories/executions")
    note = browser_wait(browser, ec.presence_of_element_located((By.ID, "wiki-export-note")))
    assert browser.find_elements(By.ID, "wiki-zip-link") == []
    assert "it is off for this company" in note.text
    browser.get(f"{base}/console/memories/wiki.zip")
    heading = browser_wait(browser, ec.presence_of_element_located((By.TAG_NAME, "h1")))
    assert heading.text == "Not found"
    assert "no wiki export yet" in browser.find_element(By.ID, "not-found").text
    assert browser.find_elements(By.CSS_SELECTOR, "header.topbar nav")  # the console's frame
    background = browser.execute_script(
        "return getComputedStyle(document.querySelector('header.topbar')).backgroundColor"
    )
    assert background == "rgb(29, 35, 48)"  # console.css applied
