"""The two clients: :class:`MemoryClient` (sync) and :class:`AsyncMemoryClient` (async), with
the same resources."""

from __future__ import annotations

import httpx

from synthorg_memory._transport import AsyncTransport, SyncTransport
from synthorg_memory.resources import (
    Conversations,
    Dreams,
    Executions,
    Memories,
    Org,
    Shared,
    Subjects,
)

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RETRY_WAIT = 60.0


class _Client:
    """The options and resources both clients share.

    ``max_retries``: how many times a 429 or 503 answer is retried (after the server's
    ``Retry-After``; 0: never); ``max_retry_wait``: the longest single wait, in seconds;
    ``http_client``: an ``httpx.Client`` (``httpx.AsyncClient`` for the async client) of
    yours, for proxies or transports; you close it.
    """

    _transport_class: type

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
    ) -> None:
        transport = self._transport_class(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            http_client=http_client,
        )
        self._transport = transport
        #: the caller's private memories
        self.memories = Memories(transport)
        #: the company's shared knowledge
        self.shared = Shared(transport)
        #: org facts and core policies
        self.org = Org(transport)
        #: execution reports
        self.executions = Executions(transport)
        #: conversations and their extraction runs
        self.conversations = Conversations(transport)
        #: deep dreams on request
        self.dreams = Dreams(transport)
        #: end users: their memories and their erasure
        self.subjects = Subjects(transport)


class MemoryClient(_Client):
    """The API as an agent (its API key); see :class:`_Client` for the options."""

    _transport_class = SyncTransport

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncMemoryClient(_Client):
    """:class:`MemoryClient`'s surface, async: every method returns an awaitable, and a
    paginated list is an async iterator (``async for memory in client.memories.list()``)."""

    _transport_class = AsyncTransport

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
