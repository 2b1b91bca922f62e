"""Every console page in a real headless Chromium, as each kind of person: an admin, an
operator and a viewer of one company, and a staff user of another company (who sees none of
it). What each role may do is checked by the controls the page offers; what the database
holds after a refused action is checked in the page-specific tests (this one only reads)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from persistence.services.companies import company_config_set
from tests.console.test_browser import PASSWORD, _wait
from tests.console.test_screenshots import _world
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)

NOT_FOUND = "Not found"  # the console's own 404 page (templates/404.html)


def _log_in(browser, base: str, username: str) -> None:
    browser.delete_all_cookies()
    browser.get(f"{base}/console/login")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))


def _open(browser, base: str, page: str) -> str:
    """The page's visible text once it has loaded (a console page's ``h1``, or Django's
    plain 404 page)."""
    browser.get(f"{base}{page}")
    _wait(browser, ec.presence_of_element_located((By.TAG_NAME, "h1")))
    return browser.find_element(By.TAG_NAME, "body").text


def _has(browser, element_id: str) -> bool:
    return bool(browser.find_elements(By.ID, element_id))


def test_every_page_as_admin_operator_viewer_and_another_companys_staff(live_server, browser):
    company, agents, promotion, memory_id = _world()  # olivia (operator), ada (admin)
    planner = agents[0]
    company_config_set(
        company=company,
        data={"memory": {"consolidation": {"experience_compressor": {"enabled": True}}}},
    )
    MembershipFactory(company=company, role="viewer", user__username="vera")
    other = CompanyFactory(name="Globex", slug="globex")
    AgentFactory(company=other, name="globex-bot")
    MembershipFactory(
        company=other, role="admin", user__username="sam", user__is_staff=True
    )  # staff, and an admin, of another company
    base = live_server.url
    preview = f"/console/memories/context-preview?agent={planner.pk}&query=billing&token_budget=200"
    pages = {
        "inbox": "/console/inbox/",
        "item": f"/console/inbox/items/{promotion.pk}",
        "policies": "/console/policies/",
        "agents": "/console/agents/",
        "agent": f"/console/agents/{planner.pk}",
        "facts": "/console/facts/",
        "shared": "/console/memories/shared",
        "memories": "/console/memories/",
        "memory_list": f"/console/memories/agents/{planner.pk}",
        "memory_detail": f"/console/memories/agents/{planner.pk}/{memory_id}",
        "preview": preview,
        "requests": "/console/memories/requests",
        "evolver": "/console/memories/skill-evolver",
        "executions": "/console/memories/executions",
        "fine_tune": "/console/memories/fine-tune",
        "config": "/console/company/config",
        "costs": "/dashboard/costs",
    }
    # which controls each role is offered, by page
    controls = {
        "item": ("approve-button", "reject-button"),
        "agent": ("create-key", "save-profile"),
        "memory_detail": ("delete-link",),
        "policies": ("add-button",),
        "executions": ("compress-now",),
        "evolver": ("add-skill-button",),
        "fine_tune": ("preflight-button",),
    }
    offered = {
        "ada": {
            "approve-button",
            "reject-button",
            "create-key",
            "save-profile",
            "delete-link",
            "add-button",
            "compress-now",
            "add-skill-button",
            "preflight-button",
        },
        "olivia": {
            "approve-button",
            "reject-button",
            "delete-link",
            "compress-now",
            "add-skill-button",
        },
        "vera": set(),
    }
    for username in ("ada", "olivia", "vera"):
        _log_in(browser, base, username)
        for name, page in pages.items():
            text = _open(browser, base, page)
            assert NOT_FOUND not in text, (username, name)
            assert "Acme Robotics" in text, (username, name)  # the company they act in
            for element_id in controls.get(name, ()):
                assert _has(browser, element_id) == (element_id in offered[username]), (
                    username,
                    name,
                    element_id,
                )
            if name == "config":  # admins and owners only
                admin = username == "ada"
                assert _has(browser, "config-form") == admin, username
                assert _has(browser, "config-forbidden") == (not admin), username
            if name in ("memory_list", "memory_detail", "agent", "preview"):
                assert "planner" in text

    # Staff of another company: acme's objects are 404, its lists show only Globex.
    _log_in(browser, base, "sam")
    secrets = ("planner", promotion.title, "Acme Robotics", "Never push to main.")
    for name, page in pages.items():
        text = _open(browser, base, page)
        if name in ("item", "agent", "memory_list", "memory_detail"):
            assert NOT_FOUND in text, (name, text[:200])
        leaked = [s for s in secrets if s in browser.page_source]
        assert leaked == [], (name, leaked)
    text = _open(browser, base, "/dashboard/costs?company=acme")  # naming acme: not theirs
    assert NOT_FOUND in text and "Acme" not in browser.page_source
