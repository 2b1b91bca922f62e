"""Asking for a JSON answer the way every OpenAI-compatible server understands (pure).

:func:`complete_json` sends ``response_format: {"type": "json_schema", ...}`` — the one
structured-output type OpenAI, Ollama ``/v1``, vLLM, llama.cpp's server and LM Studio all
honour (LM Studio refuses ``json_object``). A server that rejects the field (a 400 or 422
whose message names ``response_format``, ``json_schema`` or structured output, as every
provider's refusal does) is asked once more without it; any other refusal (a bad key, an
unknown model) is raised as it is. The answer is validated by the caller either way
(:mod:`synthorg.llm.replies` reads fences, prose and reasoning blocks), so constrained
decoding is a help, never a requirement.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from synthorg.llm.base import ChatMessage, Completion, CompletionProvider, LLMRequestError

logger = logging.getLogger(__name__)

_REFUSED_STATUS = re.compile(r"\bHTTP (400|422)\b")
_ABOUT_FORMAT = re.compile(r"response_format|json_schema|json_object|structured", re.IGNORECASE)


def refuses_structured_output(exc: LLMRequestError) -> bool:
    """True when the provider refused the request because of its ``response_format``."""
    message = str(exc)
    return bool(_REFUSED_STATUS.search(message) and _ABOUT_FORMAT.search(message))


def json_schema_format(name: str, schema: dict[str, Any], *, strict: bool = True) -> dict:
    """The ``response_format`` value asking for an answer matching ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": strict, "schema": schema},
    }


def complete_json(
    provider: CompletionProvider,
    messages: Sequence[ChatMessage],
    *,
    response_format: dict,
    **kwargs: Any,
) -> Completion:
    """One completion asking for structured output; asked again without it when refused."""
    try:
        return provider.complete(messages, response_format=response_format, **kwargs)
    except LLMRequestError as exc:
        if not refuses_structured_output(exc):
            raise
        logger.info("structured output refused (%s); asking without response_format", exc)
        return provider.complete(messages, **kwargs)
