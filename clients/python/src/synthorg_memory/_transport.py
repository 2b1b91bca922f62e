"""Sending calls: the one place requests are built, retried, parsed and turned into errors.

A resource method describes its request as a :class:`Call` of an :class:`Endpoint`; the sync
and the async transport run the same calls, so both clients have one definition of every
request. A call may continue (``then``): a store reads the stored memory back.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, TypeAdapter

from synthorg_memory.errors import (
    RateLimitedError,
    SynthOrgError,
    UnavailableError,
    error_class,
)

API_PREFIX = "/api/v1"
USER_AGENT = "synthorg-memory-python/0.1.0"
#: statuses retried (with the server's ``Retry-After`` when it sends one)
RETRIED = frozenset({429, 503})


@dataclass(frozen=True)
class Endpoint:
    """One operation of the API, as the OpenAPI schema names it."""

    method: str
    #: the schema's path without ``/api/v1`` (``/memories/{id}``)
    path: str
    #: the model of the response (of each item of a paginated or array response)
    response: Any = None
    #: the body members and query parameters the client may send
    body: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    #: ``page``: a paginated list (``{"next", "results"}``); ``array``: a JSON array
    shape: str = "object"


@dataclass
class Call:
    endpoint: Endpoint
    path_params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    query: dict[str, Any] = field(default_factory=dict)
    #: continues with the parsed result: another call, or the final value
    then: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        sent = set(self.body or ()) - set(self.endpoint.body)
        sent |= set(self.query) - set(self.endpoint.query)
        if sent:  # the drift test checks the declared names against the schema
            raise TypeError(f"{self.endpoint.path} does not take {sorted(sent)}")

    @property
    def url(self) -> str:
        path = self.endpoint.path.format(
            **{key: quote(str(value), safe="") for key, value in self.path_params.items()}
        )
        return API_PREFIX + path


def present(**values: Any) -> dict[str, Any]:
    """The members given (``None`` means "not sent")."""
    return {key: value for key, value in values.items() if value is not None}


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise TypeError(f"cannot send {type(value).__name__} as JSON")


def _query(params: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in params.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(str(v) for v in value)
        elif isinstance(value, (datetime, date)):
            out[key] = value.isoformat()
        else:
            out[key] = str(value)
    return out


def retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (delta-seconds or an HTTP date), if any."""
    header = response.headers.get("Retry-After")
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def problem_error(response: httpx.Response, *, attempts: int) -> SynthOrgError:
    """The exception of an error response (problem+json, or whatever a proxy answered)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"detail": response.text[:500] or response.reason_phrase}
    cls = error_class(response.status_code)
    kwargs: dict[str, Any] = {
        "status": response.status_code,
        "code": str(body.get("code") or f"http_{response.status_code}"),
        "errors": body.get("errors") or [],
        "correlation_id": body.get("correlation_id") or response.headers.get("X-Correlation-Id"),
        "body": body,
        "attempts": attempts,
    }
    if issubclass(cls, (RateLimitedError, UnavailableError)):
        kwargs["retry_after"] = retry_after(response)
    return cls(str(body.get("detail") or body.get("title") or ""), **kwargs)


def connection_error(exc: httpx.TransportError, *, attempts: int) -> UnavailableError:
    return UnavailableError(
        f"{type(exc).__name__}: {exc}", code="connection_error", attempts=attempts
    )


def parse(endpoint: Endpoint, payload: Any) -> Any:
    model = endpoint.response
    if model is None or payload is None:
        return payload
    if endpoint.shape == "object":
        return TypeAdapter(model).validate_python(payload)
    return [TypeAdapter(model).validate_python(item) for item in payload]


class _Transport:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.base_url = base_url.rstrip("/")
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def request_args(self, call: Call, url: str | None) -> dict[str, Any]:
        """``url``: a page's ``next`` link (with its query) instead of the call's; only its
        path and query are followed, on the client's own origin (the key never goes to a
        host a response named)."""
        if url is not None:
            link, origin = urlsplit(url), urlsplit(self.base_url)
            url = urlunsplit((origin.scheme, origin.netloc, link.path, link.query, ""))
        args: dict[str, Any] = {
            "method": call.endpoint.method,
            "url": url or self.base_url + call.url,
            "headers": self.headers,
        }
        if url is None and call.query:
            args["params"] = _query(call.query)
        if call.body is not None:
            args["content"] = json.dumps(call.body, default=_encode)
            args["headers"] = {**self.headers, "Content-Type": "application/json"}
        return args

    def wait_before_retry(self, response: httpx.Response, attempts: int) -> float | None:
        """Seconds to wait before sending again, or ``None``: do not retry this answer.

        Only 429 and 503 are retried (the request was not acted on), at most
        ``max_retries`` times, after the server's ``Retry-After`` (else 0.5 s, 1 s, 2 s, …),
        never waiting longer than ``max_retry_wait``."""
        if response.status_code not in RETRIED or attempts > self.max_retries:
            return None
        wait = retry_after(response)
        if wait is None:
            wait = 0.5 * 2 ** (attempts - 1)
        return min(wait, self.max_retry_wait)

    @staticmethod
    def outcome(response: httpx.Response, attempts: int) -> Any:
        if response.status_code >= 400:
            raise problem_error(response, attempts=attempts)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    @staticmethod
    def continued(call: Call, payload: Any) -> Any:
        result = parse(call.endpoint, payload)
        return result if call.then is None else call.then(result)

    @staticmethod
    def page_items(call: Call, payload: dict[str, Any]) -> tuple[list[Any], str | None]:
        return parse(call.endpoint, payload["results"]), payload.get("next")


class SyncTransport(_Transport):
    def __init__(self, *, http_client: httpx.Client | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._owned = http_client is None
        self.http = http_client or httpx.Client(timeout=self.timeout)

    def send(self, call: Call, url: str | None = None) -> Any:
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self.http.request(**self.request_args(call, url))
            except httpx.TransportError as exc:
                raise connection_error(exc, attempts=attempts) from exc
            wait = self.wait_before_retry(response, attempts)
            if wait is None:
                return self.outcome(response, attempts)
            time.sleep(wait)

    def run(self, call: Call) -> Any:
        result = self.continued(call, self.send(call))
        while isinstance(result, Call):
            call = result
            result = self.continued(call, self.send(call))
        return result

    def pages(self, call: Call) -> Iterator[Any]:
        url = None
        while True:
            items, url = self.page_items(call, self.send(call, url))
            yield from items
            if not url:
                return

    def close(self) -> None:
        if self._owned:
            self.http.close()


class AsyncTransport(_Transport):
    def __init__(self, *, http_client: httpx.AsyncClient | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._owned = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=self.timeout)

    async def send(self, call: Call, url: str | None = None) -> Any:
        attempts = 0
        while True:
            attempts += 1
            try:
                response = await self.http.request(**self.request_args(call, url))
            except httpx.TransportError as exc:
                raise connection_error(exc, attempts=attempts) from exc
            wait = self.wait_before_retry(response, attempts)
            if wait is None:
                return self.outcome(response, attempts)
            await asyncio.sleep(wait)

    async def run(self, call: Call) -> Any:
        result = self.continued(call, await self.send(call))
        while isinstance(result, Call):
            call = result
            result = self.continued(call, await self.send(call))
        return result

    async def pages(self, call: Call) -> AsyncIterator[Any]:
        url = None
        while True:
            items, url = self.page_items(call, await self.send(call, url))
            for item in items:
                yield item
            if not url:
                return

    async def close(self) -> None:
        if self._owned:
            await self.http.aclose()
