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


PROXY = "10.0.0.2"


def _via_proxy(forwarded_for):
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded_for)


def test_behind_a_trusted_proxy_each_client_address_is_locked_alone(olivia, settings):
    """Behind the proxy every request comes from its address: without the trusted-proxy
    setting one attacker's failures locked olivia out for everyone."""
    from synthorg.client_ip import parse_trusted_proxies

    settings.SYNTHORG_TRUSTED_PROXY_NETWORKS = parse_trusted_proxies("10.0.0.0/24")
    attacker = _via_proxy("203.0.113.66")
    answers = [_post(attacker, "/console/login", f"wrong-{n}").status_code for n in range(6)]
    assert answers == [200] * 4 + [429] * 2
    assert list(AccessAttempt.objects.values_list("username", "ip_address")) == [
        ("olivia", "203.0.113.66")
    ]
    # olivia, from her own address through the same proxy, still logs in
    assert _logged_in(_post(_via_proxy("198.51.100.20"), "/console/login", PASSWORD))
    # the attacker cannot escape the lock by writing another address in front
    escape = _via_proxy("192.0.2.1, 203.0.113.66")
    assert _post(escape, "/console/login", PASSWORD).status_code == 429


def test_without_trusted_proxies_a_forged_header_changes_nothing(olivia):
    answers = [
        _post(_via_proxy(f"203.0.113.{n}"), "/console/login", f"wrong-{n}").status_code
        for n in range(6)
    ]
    # rotating the header does not reset the count: the key is the peer's address
    assert answers == [200] * 4 + [429] * 2
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == [PROXY]
