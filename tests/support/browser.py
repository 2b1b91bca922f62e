"""A real headless Chromium (Debian chromium + chromium-driver) driven by selenium, and
:func:`browser_wait`, the one way the browser tests wait for a condition.

A condition read while the console navigates (a form submits, a page redirects) can find its
element gone: Selenium raises ``StaleElementReferenceException``, or Chromium answers with an
inspector error ("Node with given id does not belong to the document") as a plain
``WebDriverException``. Either means "not yet": :func:`browser_wait` asks again, as for a
missing element, until its timeout — a condition that never holds still fails.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.fail("chromium and chromium-driver are required: run `make test` (installs them)")
    profile = tempfile.mkdtemp(prefix="synthorg-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1280,1000")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


NOT_YET = (NoSuchElementException, StaleElementReferenceException, WebDriverException)


def browser_wait(browser, condition, timeout: float = 30):
    return WebDriverWait(browser, timeout, ignored_exceptions=NOT_YET).until(condition)
