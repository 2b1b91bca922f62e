"""The client address login throttling keys on (synthorg/client_ip.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

from synthorg.client_ip import parse_trusted_proxies, resolve_client_ip

PROXIES = parse_trusted_proxies("10.0.0.0/8, 127.0.0.1, 2001:db8:f::/48")


@pytest.mark.parametrize(
    ("remote", "forwarded", "proxies", "expected"),
    [
        # no trusted proxies: the header is the client's to write, never believed
        ("198.51.100.7", "203.0.113.9", (), "198.51.100.7"),
        # a peer that is not a trusted proxy: its header is ignored
        ("198.51.100.7", "203.0.113.9", PROXIES, "198.51.100.7"),
        # one trusted hop: the address it saw
        ("10.1.2.3", "203.0.113.9", PROXIES, "203.0.113.9"),
        # the client prepends lies: only what the trusted hops appended counts
        ("10.1.2.3", "1.1.1.1, 203.0.113.9", PROXIES, "203.0.113.9"),
        # two trusted hops (CDN edge in 10/8, local proxy on loopback)
        ("127.0.0.1", "203.0.113.9, 10.9.9.9", PROXIES, "203.0.113.9"),
        # every hop trusted: the leftmost one is the client
        ("127.0.0.1", "10.0.0.5, 10.9.9.9", PROXIES, "10.0.0.5"),
        # a malformed entry: the hop that passed it on is the client
        ("10.1.2.3", "203.0.113.9, not-an-ip", PROXIES, "10.1.2.3"),
        ("127.0.0.1", "garbage, 10.9.9.9", PROXIES, "10.9.9.9"),
        # ports and IPv6 brackets are stripped; IPv6 networks work
        ("2001:db8:f::1", "[2001:db8:1::5]:443", PROXIES, "2001:db8:1::5"),
        ("10.1.2.3", "203.0.113.9:5555", PROXIES, "203.0.113.9"),
        # no header
        ("10.1.2.3", "", PROXIES, "10.1.2.3"),
    ],
)
def test_resolve_client_ip(remote, forwarded, proxies, expected):
    assert resolve_client_ip(remote, forwarded, proxies) == expected


def test_a_bad_trusted_proxy_entry_is_refused_with_its_name():
    with pytest.raises(ValueError, match=r"'10\.0\.0\.300'"):
        parse_trusted_proxies("10.0.0.1, 10.0.0.300")
    assert parse_trusted_proxies(" , ") == ()


def test_the_server_refuses_to_start_with_a_bad_trusted_proxy_setting():
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={
            "DJANGO_SETTINGS_MODULE": "synthorg.settings",
            "SYNTHORG_TRUSTED_PROXIES": "10.0.0.0/8, proxy.internal",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        cwd=str(Path(__file__).resolve().parents[2]),
        timeout=120,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SYNTHORG_TRUSTED_PROXIES: 'proxy.internal' is not an IP address" in result.stderr
