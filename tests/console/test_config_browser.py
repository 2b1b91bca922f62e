"""The company configuration form in headless Chromium, under the console's CSP: an admin
edits a field and saves; a value the config refuses comes back with its message beside the
field (nothing saved); a save over someone else's newer revision is a 409 (nothing saved)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

from persistence.models import AuditEntry, Company
from persistence.services.companies import company_config_set
from synthorg.company_config import parse_company_config
from tests.console.test_browser import PASSWORD
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.browser import browser_wait

pytestmark = pytest.mark.django_db(transaction=True)

RRF_K = "input[name='rjf§memory§retrieval§rrf_k']"


def _wait(browser, condition):
    return browser_wait(browser, condition)


def _open_form(browser, base):
    browser.get(f"{base}/console/company/config")
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, RRF_K)))


def _type(browser, selector, text):
    field = browser.find_element(By.CSS_SELECTOR, selector)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text)


def _save(browser):
    browser.find_element(By.ID, "config-save").click()


def _rrf_k(company) -> tuple[int, int]:
    stored = Company.objects.get(pk=company.pk)
    return parse_company_config(stored.config).memory.retrieval.rrf_k, stored.config_revision


def _script_errors(browser):
    """CSP violations and script errors (the 400 and 409 answers are expected)."""
    return [
        entry
        for entry in browser.get_log("browser")
        if entry.get("source") != "network"
        and ("Content Security Policy" in entry.get("message", "") or entry["level"] == "SEVERE")
    ]


def test_admin_edits_sees_a_field_error_and_a_conflict(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    MembershipFactory(company=company, role="admin", user__username="ada")
    base = live_server.url
    browser.get(f"{base}/console/login")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("ada")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))
    browser.find_element(By.XPATH, "//details[@class='menu']/summary[.='Operations']").click()
    browser.find_element(By.LINK_TEXT, "Configuration").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, RRF_K)))
    assert _rrf_k(company) == (10, 1)

    # Edit: one field, saved through the service, audited with its diff. Every field has
    # its default, so every section is folded: the filter box finds the field.
    _wait(browser, lambda b: not b.find_element(By.CSS_SELECTOR, RRF_K).is_displayed())
    browser.find_element(By.ID, "config-filter").send_keys("rrf_k")
    _wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, RRF_K).is_displayed())
    _type(browser, RRF_K, "30")
    _save(browser)
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, ".message.success")))
    assert "Configuration saved (revision 2)." in browser.page_source
    assert _rrf_k(company) == (30, 2)
    entry = AuditEntry.objects.filter(company=company).order_by("-id").first()
    assert entry.details["changes"] == [{"field": "memory.retrieval.rrf_k", "old": 10, "new": 30}]

    # A value the config refuses: the message beside the field and at the top; nothing saved.
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, RRF_K)))
    _type(browser, RRF_K, "0")
    _save(browser)
    _wait(browser, ec.presence_of_element_located((By.ID, "config-error")))
    field_error = browser.find_element(
        By.XPATH,
        "//input[@name='rjf§memory§retrieval§rrf_k']/ancestor::div[contains(@class,"
        "'rjf-form-row')][1]//*[contains(@class,'rjf-error-text')]",
    )
    assert field_error.text == "Input should be greater than or equal to 1"
    assert "memory.retrieval.rrf_k: Input should be greater than or equal to 1" in (
        browser.find_element(By.ID, "config-field-errors").text
    )
    assert browser.find_element(By.CSS_SELECTOR, RRF_K).get_attribute("value") == "0"
    assert _rrf_k(company) == (30, 2)

    # A conflict: someone saves while the form is open; this save is refused (409).
    _open_form(browser, base)
    company_config_set(company=company, data={"memory": {"retrieval": {"rrf_k": 20}}})
    _type(browser, RRF_K, "40")
    _save(browser)
    _wait(browser, ec.presence_of_element_located((By.ID, "config-reload")))
    assert browser.find_element(By.ID, "config-error").text.startswith(
        "The configuration was changed by someone else (revision 3, you edited revision 2)"
    )
    assert _rrf_k(company) == (20, 3)
    browser.find_element(By.ID, "config-reload").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, RRF_K)))
    assert browser.find_element(By.CSS_SELECTOR, RRF_K).get_attribute("value") == "20"
    assert _script_errors(browser) == []


def _displayed(browser, selector) -> bool:
    return browser.find_element(By.CSS_SELECTOR, selector).is_displayed()


def _row_of(name: str) -> str:
    return f"//input[@name='{name}']/ancestor::div[contains(@class,'rjf-form-row')][1]"


def test_form_groups_sections_names_map_keys_filters_and_marks_changed_fields(live_server, browser):
    """The form as an operator meets it: sections folded but the one holding a changed field,
    only that field marked, labels in words with the docs' help and the YAML key, the write
    rules under their category names, and the filter box finding a field in a folded section."""
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    company_config_set(company=company, data={"memory": {"retrieval": {"rrf_k": 30}}})
    MembershipFactory(company=company, role="admin", user__username="ada")
    base = live_server.url
    browser.get(f"{base}/console/login")
    _wait(browser, ec.presence_of_element_located((By.ID, "id_username")))
    browser.find_element(By.ID, "id_username").send_keys("ada")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "header.topbar nav")))
    _open_form(browser, base)
    dream = "input[name='rjf§memory§dream§max_core_tokens']"
    # the sections without a changed field fold once the widget has rendered
    _wait(browser, lambda b: not _displayed(b, dream))

    # Only the changed field is marked, and its section (Retrieval) stays open.
    marked = browser.find_elements(By.CSS_SELECTOR, ".rjf-form-row.cfg-changed")
    assert [row.find_element(By.TAG_NAME, "label").text for row in marked] == ["RRF k"]
    assert _displayed(browser, RRF_K)
    assert "1 field set to something other than the default" in (
        browser.find_element(By.ID, "config-changed-note").text
    )
    row = browser.find_element(By.XPATH, _row_of("rjf§memory§retrieval§rrf_k"))
    assert "YAML: memory.retrieval.rrf_k; default: 10." in row.text
    # a section's title in words; folded sections show none of their fields
    titles = [
        t.get_attribute("textContent").split(" [")[0].removesuffix(" Edit")
        for t in browser.find_elements(By.CSS_SELECTOR, ".rjf-form-group-title")
    ]
    assert {"Memory", "Retrieval", "Consolidation", "Dream", "Org memory", "Write access"} <= set(
        titles
    )

    # The write rules under their category names (the keys), never a run of "value" blocks.
    assert sorted(t for t in titles if t in ("core_policy", "adr", "procedure", "convention")) == [
        "adr",
        "convention",
        "core_policy",
        "procedure",
    ]
    assert "value" not in {t.lower() for t in titles}

    # The filter finds a field inside a folded section by its YAML key; the help is the docs'.
    browser.find_element(By.ID, "config-filter").send_keys("max_core_tokens")
    _wait(browser, lambda b: _displayed(b, dream))
    assert browser.find_element(By.ID, "config-filter-count").text == "1 field match"
    assert not _displayed(browser, RRF_K)
    dream_row = browser.find_element(By.XPATH, _row_of("rjf§memory§dream§max_core_tokens"))
    assert dream_row.find_element(By.TAG_NAME, "label").text == "Max core tokens"
    assert "the stored core is cut to fit" in dream_row.text  # docs/operating/configuration.md
    # a section's name finds its fields
    _type(browser, "#config-filter", "write access")
    _wait(browser, lambda b: not _displayed(b, dream))
    assert _displayed(browser, "input[name='rjf§org_memory§write_access§rules§adr§human_allowed']")
    # cleared: folded again, the changed field shown
    _type(browser, "#config-filter", "")
    browser.find_element(By.ID, "config-filter").send_keys(Keys.BACKSPACE)
    _wait(browser, lambda b: _displayed(b, RRF_K) and not _displayed(b, dream))
    assert _script_errors(browser) == []
