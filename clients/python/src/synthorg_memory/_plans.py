"""Running one piece of logic on the sync and the async client.

An integration's operation is written once, as a generator (a *plan*) that yields the client
calls it needs (:class:`Fetch`) and receives their results; :func:`run_sync` drives it on a
:class:`~synthorg_memory.MemoryClient`, :func:`run_async` on an
:class:`~synthorg_memory.AsyncMemoryClient`. A paginated list arrives as a list.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from synthorg_memory._client import AsyncMemoryClient, MemoryClient


@dataclass(frozen=True)
class Fetch:
    """``client.<resource>.<method>(*args, **kwargs)``; ``pages``: a paginated list."""

    resource: str
    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    pages: bool = False

    def bound(self, client: Any) -> Any:
        return getattr(getattr(client, self.resource), self.method)(*self.args, **self.kwargs)


Plan = Generator[Fetch, Any, Any]


def run_sync(client: MemoryClient, plan: Plan) -> Any:
    """Drive ``plan`` on the sync client; a failed call is raised inside the plan."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            fetch = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as done:
            return done.value
        try:
            pending = fetch.bound(client)
            result, error = (list(pending) if fetch.pages else pending), None
        except Exception as exc:
            result, error = None, exc


async def run_async(client: AsyncMemoryClient, plan: Plan) -> Any:
    """Drive ``plan`` on the async client; a failed call is raised inside the plan."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            fetch = plan.throw(error) if error is not None else plan.send(result)
        except StopIteration as done:
            return done.value
        try:
            pending = fetch.bound(client)
            result = [item async for item in pending] if fetch.pages else await pending
            error = None
        except Exception as exc:
            result, error = None, exc


def check_client(client: Any) -> None:
    if not isinstance(client, (MemoryClient, AsyncMemoryClient)):
        raise TypeError(
            f"expected a MemoryClient or an AsyncMemoryClient, not {type(client).__name__}"
        )
