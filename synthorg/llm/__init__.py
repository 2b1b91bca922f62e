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
NO_MODEL_FOUND = (
    "SYNTHORG_LLM_MODEL is not set and {url}/models lists no model: set SYNTHORG_LLM_MODEL."
)
# base URL -> (model or None, monotonic time of the lookup); failures are retried later.
_discovered: dict[str, tuple[str | None, float]] = {}
_DISCOVERY_RETRY_SECONDS = 60.0


def discover_model(base_url: str, *, api_key: str | None, timeout: float) -> str | None:
    """The first model ``GET {base_url}/models`` lists (OpenAI, vLLM, Ollama, llama.cpp and
    LiteLLM all serve it), so setting only ``SYNTHORG_LLM_BASE_URL`` is enough. Cached per
    process; a failed lookup is retried after a minute. Goes through the outbound guard
    with the operator's own URL trusted."""
    import time

    import httpx

    from synthorg.outbound import guarded_client, policy_from_settings

    cached = _discovered.get(base_url)
    now = time.monotonic()
    if cached is not None and (cached[0] is not None or now - cached[1] < _DISCOVERY_RETRY_SECONDS):
        return cached[0]
    model = None
    try:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        with guarded_client(policy_from_settings().trusting(base_url)) as client:
            response = client.get(
                base_url.rstrip("/") + "/models", headers=headers, timeout=timeout
            )
        if response.status_code == 200:
            data = response.json().get("data")
            ids = [m.get("id") for m in data or [] if isinstance(m, dict)]
            model = next((i for i in ids if isinstance(i, str) and i), None)
    except (httpx.HTTPError, ValueError, AttributeError):
        model = None
    _discovered[base_url] = (model, now)
    return model


def completion_provider_from_settings(
    *, usage_recorder: UsageRecorder | None = None
) -> OpenAICompatibleChatClient:
    """The configured chat client, or :class:`LLMNotConfiguredError`. The operator set
    ``SYNTHORG_LLM_BASE_URL``, so its host counts as allow-listed by the outbound guard."""
    from django.conf import settings

    from synthorg.outbound import policy_from_settings

    conf = getattr(settings, "SYNTHORG_LLM", None) or {}
    base_url = (conf.get("BASE_URL") or "").strip()
    model = (conf.get("MODEL") or "").strip()
    if not base_url:
        raise LLMNotConfiguredError(NOT_CONFIGURED)
    if not model:
        model = discover_model(
            base_url,
            api_key=conf.get("API_KEY") or None,
            timeout=min(float(conf.get("TIMEOUT") or 30.0), 10.0),
        )
        if not model:
            raise LLMNotConfiguredError(NO_MODEL_FOUND.format(url=base_url.rstrip("/")))
    return OpenAICompatibleChatClient(
        base_url,
        model,
        api_key=conf.get("API_KEY") or None,
        timeout=float(conf.get("TIMEOUT") or 30.0),
        total_timeout=float(conf.get("TOTAL_TIMEOUT") or 120.0),
        max_retries=int(conf.get("MAX_RETRIES", 2)),
        provider=conf.get("PROVIDER") or "openai-compatible",
        usage_recorder=usage_recorder,
        policy=policy_from_settings().trusting(base_url),
    )
