"""The :class:`CompletionProvider` protocol, its value objects and errors (pure: no Django)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class LLMError(Exception):
    """A completion failed. ``retryable`` says whether trying again later could succeed."""

    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable


class LLMNotConfiguredError(LLMError):
    """No LLM endpoint is configured; callers degrade (truncation, extractive fallback)."""


class LLMConfigurationError(LLMError):
    """An endpoint is configured but no model can be named: nothing configured (or only the
    seeds' placeholder) and ``GET {base}/models`` lists none. Retryable: it succeeds once the
    operator sets a model or the server lists one."""

    retryable = True


class LLMTransientError(LLMError):
    """Rate limiting, a server error, a timeout or a dropped connection (after all retries)."""

    retryable = True


class LLMRequestError(LLMError):
    """The provider rejected the request (401/403 key, 404 model, 400 body): not retryable.

    ``status`` and ``body`` are what the provider answered (an excerpt), when it answered.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class LLMFormatRefusedError(LLMRequestError):
    """The provider refused the request's ``response_format`` — recognised by what it said,
    whatever status it said it with (llama-cpp-python: HTTP 500 ``Input should be 'text' or
    'json_object'``). The same messages with another format, or none, may be answered."""


class LLMResponseError(LLMError):
    """The provider answered 2xx with a body that is not a usable chat completion."""

    retryable = True


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Completion:
    content: str
    model: str
    provider: str
    usage: TokenUsage
    finish_reason: str | None = None


UsageRecorder = Callable[[Completion], None]
"""Called once per successful completion (e.g. to write a cost record). Its failures are
logged and swallowed: accounting must never fail the call it accounts for."""


@runtime_checkable
class CompletionProvider(Protocol):
    """Something that turns chat messages into one completion.

    ``model`` is what the caller's configuration names; ``None`` or a placeholder means the
    endpoint's model (see :func:`synthorg.llm.resolution.resolve_model`). ``deadline`` is a
    :func:`time.monotonic` instant no part of the call may outlast (e.g. an HTTP request's
    LLM budget); it can only shorten the provider's own total timeout.
    """

    def model_for(self, model: str | None = None, *, deadline: float | None = None) -> str:
        """The model a call naming ``model`` gets (``None``: the endpoint's); may look it up,
        within ``deadline`` when given. Raises :class:`LLMConfigurationError` when none."""
        ...

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        response_format: dict | None = None,
        deadline: float | None = None,
    ) -> Completion: ...
