"""Who is calling the MCP server: an agent API key, resolved by the app that owns keys.

The kernel does not import apps: ``persistence`` registers the resolver in its
``AppConfig.ready`` (the way apps register schedules and tools).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KeyRejected:
    code: str
    message: str


KeyResolver = Callable[[str], Any]
"""raw key → the agent's principal, or a :class:`KeyRejected`."""

_resolver: KeyResolver | None = None


def register_key_resolver(resolver: KeyResolver) -> None:
    global _resolver
    _resolver = resolver


def principal_for_key(raw_key: str):
    """The principal for ``raw_key`` or a :class:`KeyRejected` (never raises for a bad key)."""
    if _resolver is None:
        raise RuntimeError("no API-key resolver registered (is the persistence app installed?)")
    return _resolver(raw_key)
