"""Refuse to serve beyond this machine with the development ``SECRET_KEY``.

The fixed development key (``settings.DEVELOPMENT_SECRET_KEY``) keeps ``make run`` zero-config,
but anyone who knows it (it is in the source) can forge session cookies and password-reset
tokens. It is accepted only when every address served is a loopback one, or with
``DJANGO_DEBUG`` on; ``manage.py serve`` and the gunicorn config both ask this module.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings

DEVELOPMENT_KEY_REFUSED = (
    "Refusing to serve on {binds} with the development SECRET_KEY: set DJANGO_SECRET_KEY "
    "to a long random value (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(50))'`)"
    ", or bind to 127.0.0.1 for local use."
)


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1); anything else may be reached."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost, "" or 0.0.0.0-style wildcards


def bind_host(bind: str) -> str | None:
    """The host of a gunicorn ``bind`` (``HOST``, ``HOST:PORT``, ``[V6]:PORT``); ``None`` for
    a unix socket or file descriptor (served to whatever proxy connects: not loopback-only)."""
    if bind.startswith(("unix:", "fd://")):
        return None
    if bind.startswith("["):
        return bind[1 : bind.index("]")]
    return bind.rsplit(":", 1)[0] if bind.count(":") == 1 else bind


def development_key_refusal(hosts: Iterable[str | None]) -> str | None:
    """The refusal message when the development key would be served beyond loopback."""
    if settings.DEBUG or settings.SECRET_KEY != settings.DEVELOPMENT_SECRET_KEY:
        return None
    hosts = list(hosts)
    if hosts and all(h is not None and is_loopback_host(h) for h in hosts):
        return None
    return DEVELOPMENT_KEY_REFUSED.format(binds=", ".join(h or "a socket" for h in hosts))
