"""LLM completions: the :class:`CompletionProvider` protocol and an OpenAI-compatible client.

:func:`completion_provider_from_settings` builds the client from ``settings.SYNTHORG_LLM``
(read at call time, never at import); with no base URL or model it raises
:class:`LLMNotConfiguredError`, which LLM-dependent steps handle by degrading.
The kernel never writes cost records itself: callers pass a ``usage_recorder``.
"""

from __future__ import annotations

from synthorg.llm.base import (
    ChatMessage,
    Completion,
    CompletionProvider,
    LLMError,
    LLMNotConfiguredError,
    LLMRequestError,
    LLMResponseError,
    LLMTransientError,
    TokenUsage,
    UsageRecorder,
)
from synthorg.llm.openai_chat import OpenAICompatibleChatClient

__all__ = [
    "ChatMessage",
    "Completion",
    "CompletionProvider",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMTransientError",
    "OpenAICompatibleChatClient",
    "TokenUsage",
    "UsageRecorder",
    "completion_provider_from_settings",
]

NOT_CONFIGURED = (
    "No LLM is configured: set SYNTHORG_LLM_BASE_URL and SYNTHORG_LLM_MODEL "
    "(and SYNTHORG_LLM_API_KEY if the endpoint needs one)."
)


def completion_provider_from_settings(
    *, usage_recorder: UsageRecorder | None = None
) -> OpenAICompatibleChatClient:
    """The configured chat client, or :class:`LLMNotConfiguredError`."""
    from django.conf import settings

    conf = getattr(settings, "SYNTHORG_LLM", None) or {}
    base_url = (conf.get("BASE_URL") or "").strip()
    model = (conf.get("MODEL") or "").strip()
    if not base_url or not model:
        raise LLMNotConfiguredError(NOT_CONFIGURED)
    return OpenAICompatibleChatClient(
        base_url,
        model,
        api_key=conf.get("API_KEY") or None,
        timeout=float(conf.get("TIMEOUT") or 30.0),
        max_retries=int(conf.get("MAX_RETRIES", 2)),
        provider=conf.get("PROVIDER") or "openai-compatible",
        usage_recorder=usage_recorder,
    )
