"""The console's browser tests run in a real headless Chromium (tests/support/browser.py)."""

from tests.support.browser import browser  # noqa: F401  (a fixture)
