"""The failures page in headless Chromium: an operator finds it in the navigation, sees every
kind's failed job and re-queues one — checking the database after the click."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

from orgmemory.models import WebhookDelivery
from persistence.models import AuditEntry
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.persistence.test_console_failures import seed_failures
from tests.support.browser import browser_wait

PASSWORD = "pw-for-tests-123"

pytestmark = pytest.mark.django_db(transaction=True)


def _kinds(browser) -> list[str]:
    return [
        row.get_attribute("data-kind")
        for row in browser.find_elements(By.CSS_SELECTOR, "tr.failed-job")
    ]


def test_an_operator_requeues_a_failed_delivery_from_the_failures_page(live_server, browser):
    company = CompanyFactory(name="Acme Robotics", slug="acme")
    membership = MembershipFactory(company=company, role="operator", user__username="olivia")
    jobs = seed_failures(company)
    webhook = jobs["webhook"]
    browser.get(f"{live_server.url}/console/")
    browser_wait(browser, ec.presence_of_element_located((By.ID, "id_username"))).send_keys(
        "olivia"
    )
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(
        browser,
        ec.element_to_be_clickable((By.XPATH, "//details[@class='menu']/summary[.='Operations']")),
    ).click()
    browser_wait(browser, ec.element_to_be_clickable((By.LINK_TEXT, "Failures"))).click()
    browser_wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "tr.failed-job")))
    assert _kinds(browser) == [
        "orgmemory.webhook",
        "procedural.capture",
        "evolver.draft",
        "memory.reembed",
        "finetune.run",
    ]
    row = browser.find_element(By.CSS_SELECTOR, f'tr.failed-job[data-job="{webhook.pk}"]')
    assert row.find_element(By.CSS_SELECTOR, "td.job-reason").text == "HTTP 503"
    row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(
        browser,
        lambda b: "Webhook delivery re-queued" in b.find_element(By.CSS_SELECTOR, ".messages").text,
    )
    assert _kinds(browser) == [
        "procedural.capture",
        "evolver.draft",
        "memory.reembed",
        "finetune.run",
    ]
    webhook.refresh_from_db()
    assert (webhook.status, webhook.attempts) == ("pending", 0)
    assert (
        WebhookDelivery.objects.get(pk=webhook.pk)
        .status_history.filter(
            actor=f"user:{membership.user.pk}", reason="re-queued by an operator"
        )
        .count()
        == 1
    )
    audit = AuditEntry.objects.get(action_type="webhook_delivery.requeued")
    assert (audit.actor_user_id, audit.target_id) == (membership.user.pk, str(webhook.pk))
