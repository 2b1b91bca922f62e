"""A :class:`CompletionProvider` over an OpenAI-compatible ``POST /chat/completions``.

Works with OpenAI and with servers copying its wire format (vLLM, llama.cpp server, Ollama,
LiteLLM). Pure module: no Django imports.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from synthorg.http_json import (
    MalformedResponseError,
    RejectedHttpError,
    RetryingJsonPoster,
    TransientHttpError,
    excerpt,
)
from synthorg.llm.base import (
    ChatMessage,
    Completion,
    LLMFormatRefusedError,
    LLMRequestError,
    LLMResponseError,
    LLMTransientError,
    TokenUsage,
    UsageRecorder,
)
from synthorg.llm.resolution import resolve_model
from synthorg.llm.structured import names_response_format
from synthorg.outbound import GuardedTransport, OutboundPolicy

logger = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAICompatibleChatClient:
    """Chat completions over HTTP with retries and token accounting.

    Each call is retried up to ``max_retries`` times, with exponential backoff, on
    408/409/429/5xx, timeouts and connection errors (a ``Retry-After`` header in seconds is
    honoured up to ``backoff_max``); after the last attempt an :class:`LLMTransientError` is
    raised. Any other 4xx is an :class:`LLMRequestError` at once. A 2xx body that is not JSON
    or has no message content is an :class:`LLMResponseError` (not retried: the same request
    would most likely get the same answer).

    Args:
        base_url: API root including any version prefix, e.g. ``https://api.openai.com/v1``.
        model: default model; a call may name another. ``None`` (or a placeholder): the
            first model ``GET {base_url}/models`` lists (see :func:`resolve_model`).
        api_key: sent as ``Authorization: Bearer``; omitted when empty.
        timeout: seconds for connecting and for each read/write, per attempt.
        total_timeout: seconds for one :meth:`complete` as a whole — every attempt, every
            read of a trickling answer and every back-off wait (``None``: unbounded). When it
            runs out, :class:`LLMTransientError` says so.
        max_retries: retries after the first attempt (``0`` = a single try).
        provider: name recorded in :class:`Completion` (and so in cost records).
        usage_recorder: called with every successful :class:`Completion`.
        sleep: how to wait between attempts; tests pass a recorder instead of sleeping.
        policy: outbound allow-list (:mod:`synthorg.outbound`); ``None`` reads the
            operator's ``SYNTHORG_OUTBOUND_ALLOW`` at each connection.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        total_timeout: float | None = 120.0,
        max_retries: int = 2,
        provider: str = "openai-compatible",
        usage_recorder: UsageRecorder | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        policy: OutboundPolicy | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if total_timeout is not None and total_timeout <= 0:
            raise ValueError(f"total_timeout must be positive, got {total_timeout}")
        self._total_timeout = total_timeout
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._provider = provider
        self._usage_recorder = usage_recorder
        self._http = RetryingJsonPoster(
            self._url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retryable_status=_RETRYABLE_STATUS,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            transport=transport,
            sleep=sleep,
            policy=policy,
        )

    def __repr__(self) -> str:
        # Never show the API key.
        return f"{type(self).__name__}(url={self._url!r}, model={self._model!r})"

    def __enter__(self) -> OpenAICompatibleChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def model_for(self, model: str | None = None, *, deadline: float | None = None) -> str:
        """The model a call naming ``model`` gets: the configured one, else the first one
        ``GET /models`` lists, looked up within ``deadline`` (a :func:`time.monotonic`
        instant, e.g. a request's LLM budget) when given; :class:`LLMConfigurationError`
        when there is none."""
        return self._resolve(model, deadline=deadline)

    def _resolve(self, model: str | None, *, deadline: float | None) -> str:
        remaining = self._http.timeout if deadline is None else deadline - time.monotonic()
        return resolve_model(
            model,
            default=self._model,
            base_url=self._url.removesuffix("/chat/completions"),
            api_key=self._http.api_key,
            timeout=min(self._http.timeout, remaining),
            # A lookup cut short by the caller's deadline says nothing about the endpoint:
            # it is not remembered as "no model" for the next caller.
            remember_failure=remaining >= self._http.timeout,
            # the same outbound guard as the completions (a test's transport replaces both)
            transport=self._http.transport or GuardedTransport(self._http.policy),
        )

    def close(self) -> None:
        self._http.close()

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_format: dict | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """One completion. ``response_format`` is sent as is (e.g. ``{"type": "json_schema",
        "json_schema": {...}}``); a provider that refuses it (with whatever status: 400 and
        422, llama-cpp-python 500) raises :class:`LLMFormatRefusedError` at once, not
        retried, for the caller to ask otherwise (:func:`synthorg.llm.structured.complete_json`).
        ``deadline`` (a :func:`time.monotonic` instant) can only shorten ``total_timeout``."""
        if not messages:
            raise ValueError("messages must not be empty")
        if self._total_timeout is not None:
            own = time.monotonic() + self._total_timeout
            deadline = own if deadline is None else min(deadline, own)
        body: dict[str, Any] = {
            "model": self._resolve(model, deadline=deadline),
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if response_format is not None:
            body["response_format"] = response_format
        payload = self._post_with_retries(body, deadline=deadline)
        completion = self._parse(payload, requested_model=body["model"])
        if self._usage_recorder is not None:
            try:
                self._usage_recorder(completion)
            except Exception:
                logger.exception("LLM usage recorder failed; the completion is still returned")
        return completion

    def _post_with_retries(self, body: dict[str, Any], *, deadline: float | None) -> Any:
        # Only a request that names a response_format can have it refused; the refusal is
        # read from the provider's words, since servers say it with 400, 422 or 500.
        rejects = _refuses_response_format if "response_format" in body else None
        try:
            return self._http.post(
                body, describe=self._describe(body), deadline=deadline, rejects=rejects
            )
        except TransientHttpError as exc:
            raise LLMTransientError(str(exc)) from exc
        except RejectedHttpError as exc:
            error = LLMFormatRefusedError if exc.recognised else LLMRequestError
            raise error(str(exc), status=exc.status, body=exc.body) from exc
        except MalformedResponseError as exc:
            raise LLMResponseError(str(exc)) from exc

    def _parse(self, payload: Any, *, requested_model: str) -> Completion:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError(
                f"chat completion from {self._url} has no choices: {excerpt(repr(payload))}"
            )
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise LLMResponseError(
                f"chat completion from {self._url} has no text content: {excerpt(repr(choices[0]))}"
            )
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        model = payload.get("model")
        return Completion(
            content=content,
            model=model if isinstance(model, str) and model else requested_model,
            provider=self._provider,
            usage=TokenUsage(
                input_tokens=_count(usage.get("prompt_tokens")),
                output_tokens=_count(usage.get("completion_tokens")),
            ),
            finish_reason=choices[0].get("finish_reason"),
        )

    def _describe(self, body: dict[str, Any]) -> str:
        return f"chat completion request to {self._url} (model {body['model']!r})"


def _refuses_response_format(status: int, text: str) -> bool:
    """A failed answer that refuses the ``response_format`` sent: a client error or a server
    error whose message names the field (never a rate limit or an unavailable server)."""
    return status not in (408, 429, 502, 503, 504) and names_response_format(text)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
