"""Who may name the client in ``X-Forwarded-For`` on the served app: uvicorn (under
gunicorn, ``synthorg.gunicorn_conf``) rewrites the client address Django sees as
``REMOTE_ADDR`` only for the proxies the operator trusts."""

import asyncio

import pytest
from gunicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from synthorg.gunicorn_conf import trusted_forwarders


def _served_client(environ: dict, peer: str, forwarded_for: str) -> str:
    """The client address the app receives for a request from ``peer`` carrying
    ``forwarded_for``, with gunicorn configured by our config module under ``environ``."""
    config = Config()
    config.set("forwarded_allow_ips", trusted_forwarders(environ))
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"][0]

    middleware = ProxyHeadersMiddleware(app, trusted_hosts=config.forwarded_allow_ips)
    scope = {
        "type": "http", "client": (peer, 50000), "scheme": "http",
        "headers": [(b"x-forwarded-for", forwarded_for.encode())],
    }  # fmt: skip
    asyncio.run(middleware(scope, None, None))
    return seen["client"]


@pytest.mark.parametrize(
    ("environ", "peer", "expected"),
    [
        # default: nobody, not even a local process, names the client (gunicorn's own
        # default would have believed loopback)
        ({}, "127.0.0.1", "127.0.0.1"),
        ({"SYNTHORG_TRUSTED_PROXIES": ""}, "127.0.0.1", "127.0.0.1"),
        # the operator's proxies, as networks
        ({"SYNTHORG_TRUSTED_PROXIES": "10.0.0.0/8"}, "10.2.3.4", "203.0.113.9"),
        ({"SYNTHORG_TRUSTED_PROXIES": "10.0.0.0/8"}, "192.0.2.7", "192.0.2.7"),
        # gunicorn's variable still works when ours is unset; ours wins when both are set
        ({"FORWARDED_ALLOW_IPS": "127.0.0.1"}, "127.0.0.1", "203.0.113.9"),
        (
            {"FORWARDED_ALLOW_IPS": "127.0.0.1", "SYNTHORG_TRUSTED_PROXIES": "10.0.0.1"},
            "127.0.0.1",
            "127.0.0.1",
        ),
    ],
)
def test_only_trusted_proxies_name_the_client(environ, peer, expected):
    assert _served_client(environ, peer, "203.0.113.9") == expected


def test_a_host_address_given_as_a_network_is_normalised_for_gunicorn():
    # gunicorn refuses 10.0.0.1/24 (host bits set); ours accepts it as 10.0.0.0/24
    assert trusted_forwarders({"SYNTHORG_TRUSTED_PROXIES": "10.0.0.1/24, ::1"}) == (
        "10.0.0.0/24,::1/128"
    )
