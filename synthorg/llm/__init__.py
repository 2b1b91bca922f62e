"""LLM completions: the :class:`CompletionProvider` protocol and an OpenAI-compatible client.

:func:`completion_provider_from_settings` builds the client from ``settings.SYNTHORG_LLM``
(read at call time, never at import); with no base URL it raises
:class:`LLMNotConfiguredError`, which LLM-dependent steps handle by degrading. Which model a
call names is decided in one place, :func:`resolve_model`; replies are read by
:mod:`synthorg.llm.replies`.
The kernel never writes cost records itself: callers pass a ``usage_recorder``.
"""

from __future__ import annotations

from synthorg.llm.base import (
    ChatMessage,
    Completion,
    CompletionProvider,
    LLMConfigurationError,
    LLMError,
    LLMFormatRefusedError,
    LLMNotConfiguredError,
    LLMRequestError,
    LLMResponseError,
    LLMTransientError,
    TokenUsage,
    UsageRecorder,
)
from synthorg.llm.openai_chat import OpenAICompatibleChatClient
from synthorg.llm.resolution import (
    PLACEHOLDER_MODELS,
    configured_model,
    is_placeholder,
    resolve_model,
)

__all__ = [
    "PLACEHOLDER_MODELS",
    "ChatMessage",
    "Completion",
    "CompletionProvider",
    "LLMConfigurationError",
    "LLMError",
    "LLMFormatRefusedError",
    "LLMNotConfiguredError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMTransientError",
    "OpenAICompatibleChatClient",
    "TokenUsage",
    "UsageRecorder",
    "completion_provider_from_settings",
    "configured_model",
    "is_placeholder",
    "llm_configured",
    "resolve_model",
]

NOT_CONFIGURED = (
    "No LLM is configured: set SYNTHORG_LLM_BASE_URL (and SYNTHORG_LLM_API_KEY if the "
    "endpoint needs one; SYNTHORG_LLM_MODEL, or the first model it lists is used)."
)


def completion_provider_from_settings(
    *, usage_recorder: UsageRecorder | None = None
) -> OpenAICompatibleChatClient:
    """The configured chat client, or :class:`LLMNotConfiguredError` when no endpoint is set.

    The model is resolved per call (:func:`resolve_model`): a call's own model, else
    ``SYNTHORG_LLM_MODEL``, else the first one the endpoint lists — or
    :class:`LLMConfigurationError` from :meth:`~OpenAICompatibleChatClient.complete`.
    The operator set ``SYNTHORG_LLM_BASE_URL``, so its host counts as allow-listed by the
    outbound guard (for the completions and the ``/models`` lookup alike)."""
    from django.conf import settings

    from synthorg.outbound import policy_from_settings

    conf = getattr(settings, "SYNTHORG_LLM", None) or {}
    base_url = (conf.get("BASE_URL") or "").strip()
    model = (conf.get("MODEL") or "").strip()
    if not base_url:
        raise LLMNotConfiguredError(NOT_CONFIGURED)
    return OpenAICompatibleChatClient(
        base_url,
        configured_model(model),
        api_key=conf.get("API_KEY") or None,
        timeout=float(conf.get("TIMEOUT") or 30.0),
        total_timeout=float(conf.get("TOTAL_TIMEOUT") or 120.0),
        max_retries=int(conf.get("MAX_RETRIES", 2)),
        provider=conf.get("PROVIDER") or "openai-compatible",
        usage_recorder=usage_recorder,
        policy=policy_from_settings().trusting(base_url),
    )


def llm_configured() -> bool:
    """Whether an LLM endpoint is configured (the deployment's ``SYNTHORG_LLM_BASE_URL``):
    whether :func:`completion_provider_from_settings` gives a client."""
    try:
        provider = completion_provider_from_settings()
    except LLMNotConfiguredError:
        return False
    provider.close()
    return True
