"""Login throttling (django-axes) on the admin's and the console's login forms."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from axes.utils import reset
from django.test import Client

from tests.persistence.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-123"
LOCKED = "Account locked: too many login attempts. Please try again later."
LOGINS = ["/admin/login/", "/console/login"]


def _post(client, url, password):
    return client.post(url, {"username": "olivia", "password": password})


def _logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.client.session


@pytest.fixture
def olivia():
    return UserFactory(username="olivia", password=PASSWORD, is_staff=True)


@pytest.mark.parametrize("url", LOGINS)
def test_thirty_wrong_passwords_then_the_right_one_is_refused(olivia, url):
    client = Client()
    answers = [_post(client, url, f"wrong-{n}").status_code for n in range(30)]
    # The form again (200) for the first four; from the fifth failure on the lockout (429).
    assert answers == [200] * 4 + [429] * 26
    right = _post(client, url, PASSWORD)
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session
    assert right.content.decode() == LOCKED
    attempt = AccessAttempt.objects.get(username="olivia")
    assert attempt.failures_since_start >= 5
    # Another address may still log in as olivia (the lock is per username and address).
    other = Client(REMOTE_ADDR="192.0.2.10")
    assert _logged_in(_post(other, url, PASSWORD))


@pytest.mark.parametrize("url", LOGINS)
def test_after_a_reset_the_right_password_works_again(olivia, url):
    client = Client()
    for n in range(5):
        _post(client, url, f"wrong-{n}")
    assert _post(client, url, PASSWORD).status_code == 429
    assert reset(username="olivia") == 1  # what the cool-off (or an operator) does
    assert _logged_in(_post(client, url, PASSWORD))
    assert not AccessAttempt.objects.filter(username="olivia").exists()


def test_a_lock_from_one_form_holds_on_the_other(olivia):
    client = Client()
    for n in range(5):
        _post(client, "/console/login", f"wrong-{n}")
    assert _post(client, "/admin/login/", PASSWORD).status_code == 429


def test_the_limit_follows_the_setting(olivia, settings):
    settings.AXES_FAILURE_LIMIT = 2
    client = Client()
    answers = [_post(client, "/console/login", "nope").status_code for _ in range(3)]
    assert answers == [200, 429, 429]


def test_successful_logins_do_not_accumulate_failures(olivia):
    client = Client()
    for round_ in range(3):
        for n in range(4):
            _post(client, "/console/login", f"wrong-{round_}-{n}")
        assert _logged_in(_post(client, "/console/login", PASSWORD))
        client.logout()
