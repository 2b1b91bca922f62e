"""Which model an LLM call names: one rule for every call site (pure: no Django import).

1. the model the caller's configuration names (a company config field such as
   ``memory.procedural.model``), else the deployment's ``SYNTHORG_LLM_MODEL``;
2. else the first model ``GET {base}/models`` lists (OpenAI, Ollama ``/v1``, vLLM, llama.cpp
   server and LM Studio all serve it), so a base URL and a key are enough;
3. else :class:`~synthorg.llm.base.LLMConfigurationError`, which each feature records on its
   run or report (status and reason) instead of doing nothing.

The spec's seeds carry placeholder model names (``example-small-001``: the default of
``memory.procedural.model``; ``example-medium-001`` and ``example-small-001``: the examples'
``summarization_model``), all of the form ``example-<size>-<NNN>``
(:data:`PLACEHOLDER_PATTERN`). A placeholder is never sent: like an empty setting it means
"the server's model".
"""

from __future__ import annotations

import re
import threading
import time

import httpx

from synthorg.llm.base import LLMConfigurationError

#: the seeds' placeholder names, and the form every one of them takes
PLACEHOLDER_MODELS = frozenset({"example-small-001", "example-medium-001"})
PLACEHOLDER_PATTERN = re.compile(r"example-[a-z]+-[0-9]+", re.IGNORECASE)

NO_MODEL = (
    "no model to ask: no model is configured (set SYNTHORG_LLM_MODEL or the feature's model "
    "setting) and GET {url}/models {problem}"
)
DISCOVERY_RETRY_SECONDS = 60.0
DISCOVERY_TIMEOUT_MAX = 10.0

# base URL -> (first listed model or None, why none, monotonic time of the lookup).
_discovered: dict[str, tuple[str | None, str, float]] = {}
_lock = threading.Lock()


def is_placeholder(name: str | None) -> bool:
    """True for "no model named": empty, blank or one of the seeds' placeholder names."""
    return name is None or not name.strip() or bool(PLACEHOLDER_PATTERN.fullmatch(name.strip()))


def configured_model(name: str | None) -> str | None:
    """``name`` stripped, or ``None`` when it names no real model."""
    return None if is_placeholder(name) else name.strip()  # type: ignore[union-attr]


def first_listed_model(
    base_url: str,
    *,
    api_key: str | None,
    timeout: float,
    transport=None,
    remember_failure: bool = True,
) -> tuple[str | None, str]:
    """The first model ``GET {base_url}/models`` lists and, when there is none, why.

    Accepts the OpenAI shape (``{"data": [{"id": ...}]}``, also served by Ollama ``/v1``,
    vLLM, llama.cpp and LM Studio) and llama.cpp's extra ``{"models": [{"model"|"name": ...}]}``.
    Cached per base URL for the process; a lookup that found nothing is retried after
    :data:`DISCOVERY_RETRY_SECONDS`; with ``remember_failure=False`` (a lookup cut short by
    its caller's deadline) a failure is not cached at all.
    """
    now = time.monotonic()
    with _lock:
        cached = _discovered.get(base_url)
    if cached is not None and (cached[0] is not None or now - cached[2] < DISCOVERY_RETRY_SECONDS):
        return cached[0], cached[1]
    model, problem = _lookup(base_url, api_key=api_key, timeout=timeout, transport=transport)
    if model is not None or remember_failure:
        with _lock:
            _discovered[base_url] = (model, problem, now)
    return model, problem


def forget_discovered_models() -> None:
    """Drop the cache (tests; an operator changing the server's models takes ≤ 1 min anyway)."""
    with _lock:
        _discovered.clear()


def _lookup(base_url: str, *, api_key, timeout: float, transport) -> tuple[str | None, str]:
    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        # No environment proxies: the outbound guard must see the real address.
        with httpx.Client(transport=transport, timeout=timeout, trust_env=False) as client:
            response = client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        return None, f"failed ({type(exc).__name__}: {str(exc) or 'no detail'})"
    if response.status_code != 200:
        return None, f"answered HTTP {response.status_code}"
    try:
        payload = response.json()
    except ValueError:
        return None, "answered a body that is not JSON"
    if not isinstance(payload, dict):
        return None, "answered JSON that is not an object"
    for entry in payload.get("data") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"].strip():
            return entry["id"].strip(), ""
    for entry in payload.get("models") or []:
        if isinstance(entry, dict):
            name = entry.get("model") or entry.get("name")
            if isinstance(name, str) and name.strip():
                return name.strip(), ""
    return None, "lists no model"


def resolve_model(
    requested: str | None,
    *,
    default: str | None,
    base_url: str,
    api_key: str | None,
    timeout: float,
    transport=None,
    remember_failure: bool = True,
) -> str:
    """The model to send: ``requested`` (the feature's setting), else ``default`` (the
    deployment's), else the first listed one; placeholders count as unset. Raises
    :class:`LLMConfigurationError` naming what to set when there is none."""
    for name in (requested, default):
        chosen = configured_model(name)
        if chosen is not None:
            return chosen
    model, problem = first_listed_model(
        base_url,
        api_key=api_key,
        timeout=max(0.001, min(timeout, DISCOVERY_TIMEOUT_MAX)),
        transport=transport,
        remember_failure=remember_failure,
    )
    if model is None:
        raise LLMConfigurationError(NO_MODEL.format(url=base_url.rstrip("/"), problem=problem))
    return model
