"""POSTing JSON to an OpenAI-compatible endpoint, with retries (pure: no Django import).

Shared by the embedding client and the chat-completions client: one lazily created, pooled
``httpx.Client``; retries with exponential backoff on retryable statuses, timeouts and
connection errors, honouring a ``Retry-After`` given in seconds; other statuses fail at
once. A ``deadline`` bounds one call as a whole (every attempt, every read of a trickling
response and every back-off wait), so a server that accepts and never answers costs at most
the caller's budget, not retries × timeout. Failures are raised as the three
:class:`HttpJsonError` kinds below, which each client translates into its own error type.
Messages never contain credentials. Every connection passes the outbound guard
(:mod:`synthorg.outbound`); a refused address is a :class:`RejectedHttpError` at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from synthorg.outbound import GuardedTransport, OutboundPolicy, OutboundRefused

BODY_EXCERPT_CHARS = 300


class HttpJsonError(Exception):
    """Base of the failures :meth:`RetryingJsonPoster.post` raises.

    ``status`` and ``body`` are the last response's status code and text (an excerpt),
    when a response arrived: what the server said, for a caller that reads it.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class TransientHttpError(HttpJsonError):
    """Still failing (retryable status, timeout, connection error) after every attempt."""


class RejectedHttpError(HttpJsonError):
    """The server answered with a status that retrying will not change (e.g. 401, 400), or
    with an answer the caller's ``rejects`` recognised (then ``recognised`` is true)."""

    def __init__(
        self, message: str, *, status: int | None = None, body: str = "", recognised: bool = False
    ) -> None:
        super().__init__(message, status=status, body=body)
        self.recognised = recognised


class MalformedResponseError(HttpJsonError):
    """A success status whose body is not JSON."""


class _BudgetExhausted(Exception):
    """The deadline passed while a response was still arriving."""


def excerpt(text: str) -> str:
    return text if len(text) <= BODY_EXCERPT_CHARS else text[:BODY_EXCERPT_CHARS] + "…"


def retry_after_seconds(response: httpx.Response) -> float | None:
    """A ``Retry-After`` given in seconds; the HTTP-date form is ignored."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class RetryingJsonPoster:
    """POST JSON bodies to one URL; thread-safe; ``close()`` drops pooled connections."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retryable_status: frozenset[int],
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        policy: OutboundPolicy | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {max_retries}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.url = url
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.retryable_status = retryable_status
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.transport = transport
        self.sleep = sleep
        #: outbound allow-list; ``None`` reads the operator's at each connection
        self.policy = policy
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def post(
        self,
        body: dict[str, Any],
        *,
        describe: str,
        deadline: float | None = None,
        rejects: Callable[[int, str], bool] | None = None,
    ) -> Any:
        """The decoded JSON response; ``describe`` names the request in error messages.

        ``deadline`` is a :func:`time.monotonic` instant after which no attempt, read or
        back-off continues (a :class:`TransientHttpError` says the budget ran out).
        ``rejects(status, text)`` is asked about every failed response: one it recognises
        refuses this request whatever its status (llama-cpp-python answers a
        ``response_format`` it lacks with a 500) and is raised at once as a
        :class:`RejectedHttpError` with ``recognised`` set, never retried.
        """
        client = self._http_client()
        attempts = self.max_retries + 1
        failure = "no attempt made"
        status: int | None = None
        text = ""
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0:
                raise TransientHttpError(f"{describe}: time budget exhausted ({failure})")
            timeout = self.timeout if remaining is None else min(self.timeout, remaining)
            try:
                response = self._send(client, body, timeout=timeout, deadline=deadline)
            except _BudgetExhausted as exc:
                raise TransientHttpError(
                    f"{describe}: time budget exhausted while reading the response"
                ) from exc
            except OutboundRefused as exc:
                raise RejectedHttpError(f"{describe} refused: {exc}") from exc
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                failure = f"{type(exc).__name__}: {str(exc) or 'no detail'}"
                status, text = None, ""
            else:
                if response.is_success:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise MalformedResponseError(
                            f"{describe}: response is not valid JSON ({exc}): "
                            f"{excerpt(response.text)!r}"
                        ) from exc
                status, text = response.status_code, excerpt(response.text)
                failure = f"HTTP {status}: {text!r}"
                recognised = rejects is not None and rejects(status, response.text)
                if recognised or status not in self.retryable_status:
                    raise RejectedHttpError(
                        f"{describe} failed: {failure}",
                        status=status,
                        body=text,
                        recognised=recognised,
                    )
                retry_after = retry_after_seconds(response)
            if attempt == attempts:
                raise TransientHttpError(
                    f"{describe} failed after {attempts} attempt(s): {failure}",
                    status=status,
                    body=text,
                )
            delay = self._backoff(attempt, retry_after)
            remaining = self._remaining(deadline)
            if remaining is not None and delay >= remaining:
                raise TransientHttpError(
                    f"{describe}: time budget exhausted after {attempt} attempt(s): {failure}"
                )
            self.sleep(delay)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _send(
        self, client: httpx.Client, body: dict[str, Any], *, timeout: float, deadline: float | None
    ) -> httpx.Response:
        """POST and read the whole response, checking ``deadline`` between chunks."""
        with client.stream("POST", self.url, json=body, timeout=timeout) as streamed:
            chunks = []
            for chunk in streamed.iter_bytes():
                chunks.append(chunk)
                if deadline is not None and time.monotonic() >= deadline:
                    raise _BudgetExhausted
            return httpx.Response(
                streamed.status_code,
                headers=streamed.headers,
                content=b"".join(chunks),
                request=streamed.request,
            )

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        return None if deadline is None else deadline - time.monotonic()

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = self.backoff_base * (2 ** (attempt - 1))
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.backoff_max)

    def _http_client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self.api_key:
                    headers["Authorization"] = f"Bearer {self.api_key}"
                # An injected transport (tests, proxies) is used as given; otherwise every
                # connection is checked, and environment proxies are not used (trust_env).
                guarded = self.transport is None
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    headers=headers,
                    transport=self.transport or GuardedTransport(self.policy),
                    trust_env=not guarded,
                )
            return self._client
