"""Outbound HTTP that a tenant cannot point at the server's own network.

Every request the server makes to a URL someone configured (a company's webhook, a
company's embedder, the LLM) goes through :func:`guarded_client` or
:class:`GuardedTransport`. The guard works at two points:

* **When a URL is configured** (:func:`check_url`): only ``http``/``https``; a host that is
  a metadata name (``metadata.google.internal`` …), ``localhost`` or an IP literal in a
  refused range — in any spelling the C resolver accepts (``127.1``, ``0x7f000001``,
  ``2130706433``, ``[::ffff:127.0.0.1]``) — is refused with a message naming the field.
* **When a connection is opened** (:class:`GuardedNetworkBackend`): the host name is
  resolved, *every* address it resolves to is checked, and the socket connects to a
  checked address (TLS still verifies and sends SNI for the original name, and the
  ``Host`` header is unchanged). A name that resolved to a public address when the URL
  was saved and to ``127.0.0.1`` now (DNS rebinding) is refused here.

Refused: loopback, private (RFC 1918, IPv6 ULA), link-local (``169.254.169.254`` and
``fe80::/10``), shared/CGNAT (``100.64.0.0/10``), multicast, unspecified, reserved and any
other non-global address, also inside IPv4-mapped, 6to4, Teredo and NAT64 IPv6 forms.

The server operator allow-lists hosts and ranges with ``SYNTHORG_OUTBOUND_ALLOW``
(``"10.0.0.0/8,embedder.internal"``): a listed host name may resolve anywhere, an address
inside a listed range is allowed. URLs the operator sets in the server's environment
(``SYNTHORG_LLM_BASE_URL``) are trusted with :meth:`OutboundPolicy.trusting`.

Settings are read at call time (lazily importing Django), never at import.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
import ssl
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

ALLOWED_SCHEMES = frozenset({"http", "https"})
#: Cloud metadata services, by name (their addresses are link-local or ULA anyway).
METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
    }
)
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# What the C resolver (inet_aton) reads as an IPv4 address: 127.1, 0x7f000001, 2130706433.
_LEGACY_IPV4 = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$", re.IGNORECASE)
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$")

SCHEME_REFUSED = "must be an http:// or https:// URL (got {scheme!r})"
NO_HOST = "must name a host (e.g. https://example.com/hook)"
HOST_REFUSED = (
    "{host!r} is refused: it is {why}. The server operator may allow-list a host or "
    "range with SYNTHORG_OUTBOUND_ALLOW"
)
RESOLVES_REFUSED = (
    "{host!r} is refused: it resolves to {address} ({why}). The server operator may "
    "allow-list a host or range with SYNTHORG_OUTBOUND_ALLOW"
)
UNRESOLVED = "{host!r} does not resolve to any address"
BAD_ALLOW_ENTRY = "SYNTHORG_OUTBOUND_ALLOW: {entry!r} is neither a host name nor an IP range"


class UnsafeURLError(ValueError):
    """A configured URL the guard refuses; the message says why (without the field name)."""


class OutboundRefused(httpx.ConnectError):
    """A connection the guard refused at connect time (a host resolving to a refused address)."""


def address_problem(address: IPAddress) -> str | None:
    """Why ``address`` may not be contacted (``"loopback"`` …), or ``None`` when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = address_problem(embedded)
            return f"an IPv6 form of {embedded}, {inner}" if inner else None
    checks = (
        (address.is_unspecified, "the unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address (cloud metadata lives here)"),
        (address.is_multicast, "a multicast address"),
        (
            isinstance(address, ipaddress.IPv4Address) and address in _CGNAT,
            "a shared (CGNAT) address",
        ),
        (
            isinstance(address, ipaddress.IPv6Address) and address.is_site_local,
            "a site-local address",
        ),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((why for refused, why in checks if refused), None)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def literal_address(host: str) -> IPAddress | None:
    """``host`` as an IP address if it is one in any spelling a resolver accepts."""
    text = host.strip("[]")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if _LEGACY_IPV4.match(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


@dataclass(frozen=True)
class OutboundPolicy:
    """Hosts (by name) and ranges the operator allows beyond the public internet."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows_address(self, address: IPAddress) -> bool:
        return any(address.version == n.version and address in n for n in self.networks)

    def trusting(self, url: str) -> OutboundPolicy:
        """This policy plus the host of ``url`` (a URL the operator set in the environment)."""
        host = (httpx.URL(url).host or "").lower()
        if not host:
            return self
        address = literal_address(host)
        if address is not None:
            return OutboundPolicy(self.hosts, (*self.networks, ipaddress.ip_network(address)))
        return OutboundPolicy(self.hosts | {host.rstrip(".")}, self.networks)

    def host_problem(self, host: str) -> str | None:
        """Why ``host`` itself (before any DNS) is refused, or ``None``."""
        if self.allows_host(host):
            return None
        name = host.lower().rstrip(".")
        address = literal_address(name)
        if address is not None:
            why = None if self.allows_address(address) else address_problem(address)
            return HOST_REFUSED.format(host=host, why=why) if why else None
        if name in METADATA_HOSTS:
            return HOST_REFUSED.format(host=host, why="a cloud metadata service")
        if name == "localhost" or name.endswith(".localhost"):
            return HOST_REFUSED.format(host=host, why="a loopback name")
        return None

    def resolved_problem(self, host: str, addresses: Iterable[str]) -> str | None:
        """Why connecting to ``host`` at ``addresses`` is refused, or ``None``."""
        if self.allows_host(host):
            return None
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            if self.allows_address(address):
                continue
            why = address_problem(address)
            if why:
                return RESOLVES_REFUSED.format(host=host, address=address, why=why)
        return None


def parse_allow_list(text: str) -> OutboundPolicy:
    """``"10.0.0.0/8, embedder.internal"`` → a policy; a malformed entry is a ``ValueError``."""
    hosts, networks = set(), []
    for entry in re.split(r"[,\s]+", text or ""):
        if not entry:
            continue
        try:
            networks.append(
                ipaddress.ip_network(entry.replace("[", "").replace("]", ""), strict=False)
            )
            continue
        except ValueError:
            pass
        name = entry.lower().rstrip(".")
        if not _HOST_NAME.match(name):
            raise ValueError(BAD_ALLOW_ENTRY.format(entry=entry))
        hosts.add(name)
    return OutboundPolicy(frozenset(hosts), tuple(networks))


@functools.lru_cache(maxsize=8)
def _cached_policy(text: str) -> OutboundPolicy:
    return parse_allow_list(text)


def policy_from_settings() -> OutboundPolicy:
    """The operator's allow-list (``settings.SYNTHORG_OUTBOUND_ALLOW``), read now."""
    from django.conf import settings

    text = getattr(settings, "SYNTHORG_OUTBOUND_ALLOW", "") if settings.configured else ""
    return _cached_policy(text or "")


def check_url(url: str, *, policy: OutboundPolicy | None = None) -> str:
    """Refuse ``url`` (:class:`UnsafeURLError`) unless it is http(s) to an allowed host.

    No DNS lookup: names are checked again, on every resolved address, at connect time.
    """
    policy = policy if policy is not None else policy_from_settings()
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise UnsafeURLError(f"is not a valid URL ({exc})") from None
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise UnsafeURLError(SCHEME_REFUSED.format(scheme=parsed.scheme or url.split(":")[0]))
    if not parsed.host:
        raise UnsafeURLError(NO_HOST)
    problem = policy.host_problem(parsed.host)
    if problem:
        raise UnsafeURLError(problem)
    return url


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedNetworkBackend(httpcore.SyncBackend):
    """Resolves, checks every address, then connects to a checked address.

    ``policy=None`` reads the operator's allow-list at each connection.
    """

    def __init__(
        self, policy: OutboundPolicy | None = None, *, resolver: Resolver | None = None
    ) -> None:
        self.policy = policy
        self.resolver = resolver or system_resolver

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        policy = self.policy if self.policy is not None else policy_from_settings()
        problem = policy.host_problem(host)
        if problem:
            raise OutboundRefused(problem)
        if literal_address(host) is not None:
            addresses = [str(literal_address(host))]
        else:
            try:
                addresses = self.resolver(host, port)
            except OSError as exc:
                raise httpcore.ConnectError(f"{host!r} does not resolve: {exc}") from exc
            if not addresses:
                raise httpcore.ConnectError(UNRESOLVED.format(host=host))
            problem = policy.resolved_problem(host, addresses)
            if problem:
                raise OutboundRefused(problem)
        failure: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure


DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One default-verifying SSL context per process. Building one loads the CA bundle
    (measured: docs/benchmarks/http.md#per-request-levers-measured-by-hand), which every
    client created per call (an LLM call, a webhook delivery, a model lookup) would
    otherwise pay again. SSL contexts are safe to share between clients and threads."""
    return httpx.create_ssl_context()


class GuardedTransport(httpx.HTTPTransport):
    """An ``httpx`` transport whose every connection passes the guard (no proxies)."""

    def __init__(
        self,
        policy: OutboundPolicy | None = None,
        *,
        verify: ssl.SSLContext | bool = True,
        resolver: Resolver | None = None,
        limits: httpx.Limits = DEFAULT_LIMITS,
    ) -> None:
        if isinstance(verify, ssl.SSLContext):
            ssl_context = verify
        elif verify:
            ssl_context = shared_ssl_context()
        else:
            ssl_context = httpx.create_ssl_context(verify=False)
        super().__init__(verify=ssl_context, limits=limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedNetworkBackend(policy, resolver=resolver),
        )


def guarded_client(
    policy: OutboundPolicy | None = None,
    *,
    verify: ssl.SSLContext | bool = True,
    resolver: Resolver | None = None,
    **kwargs: Any,
) -> httpx.Client:
    """An ``httpx.Client`` over :class:`GuardedTransport`. Environment proxies are not used
    (``trust_env=False``): a proxy would make the connect-time check see only the proxy."""
    return httpx.Client(
        transport=GuardedTransport(policy, verify=verify, resolver=resolver),
        trust_env=False,
        **kwargs,
    )
