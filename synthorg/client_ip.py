"""The client's address for login throttling: ``REMOTE_ADDR``, or — behind reverse proxies the
operator names in ``SYNTHORG_TRUSTED_PROXIES`` — the address those proxies saw.

Without trusted proxies ``X-Forwarded-For`` is ignored: any client can write that header, so
trusting it would let one host rotate addresses past the per-(username, address) lockout.
With them, the header is read **from the right**: the connection's peer must be a trusted
proxy (else its header is ignored), each trusted hop is skipped, and the first address that
is not a trusted proxy is the client. Entries left of it were written by the client and are
never believed. A malformed entry stops the walk: the hop that passed it on is the client
(a proxy that forwards garbage is not trusted to name anyone).

django-axes calls :func:`client_ip` (``AXES_CLIENT_IP_CALLABLE``). django-ipware, which
axes uses when it is installed, trusts proxies by address prefix or by a fixed hop count and
reads the header whatever the peer is; this rule needs networks and the peer, so it is here,
on the standard library's :mod:`ipaddress`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
INVALID_PROXY = "SYNTHORG_TRUSTED_PROXIES: {entry!r} is not an IP address or network ({error})."


def parse_trusted_proxies(text: str) -> tuple[Network, ...]:
    """``"10.0.0.0/8, 127.0.0.1"`` → networks; a bad entry raises ``ValueError`` naming it
    (read at start-up, so a typo stops the server instead of silently trusting nobody)."""
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError as exc:
            raise ValueError(INVALID_PROXY.format(entry=entry, error=exc)) from None
    return tuple(networks)


def _address(text: str):
    text = text.strip()
    if text.startswith("[") and "]" in text:  # "[2001:db8::1]:443"
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # "192.0.2.1:1234"
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address, proxies: Iterable[Network]) -> bool:
    return any(address in network for network in proxies)


def resolve_client_ip(remote_addr: str, forwarded_for: str, proxies: Sequence[Network]) -> str:
    """The client address of a request from ``remote_addr`` carrying ``forwarded_for``."""
    peer = _address(remote_addr or "")
    if peer is None:
        return remote_addr or ""
    client = peer
    if proxies and forwarded_for and _trusted(peer, proxies):
        for entry in reversed(forwarded_for.split(",")):
            hop = _address(entry)
            if hop is None:
                break
            client = hop
            if not _trusted(hop, proxies):
                break
    return str(client)


def client_ip(request) -> str:
    """``AXES_CLIENT_IP_CALLABLE``: :func:`resolve_client_ip` for a Django request."""
    from django.conf import settings

    return resolve_client_ip(
        request.META.get("REMOTE_ADDR", ""),
        request.META.get("HTTP_X_FORWARDED_FOR", ""),
        getattr(settings, "SYNTHORG_TRUSTED_PROXY_NETWORKS", ()),
    )
