"""Asking for a JSON answer the way every OpenAI-compatible server understands (pure).

:func:`complete_json` sends ``response_format: {"type": "json_schema", ...}`` — the
structured-output type OpenAI, Ollama ``/v1``, vLLM, llama.cpp's C++ ``llama-server`` and
LM Studio honour (LM Studio refuses ``json_object``). Not every server does:
llama-cpp-python's server (``python -m llama_cpp.server``, 0.3.x) knows only ``text`` and
``json_object`` and refuses ``json_schema`` with an HTTP **500** (``Input should be 'text'
or 'json_object'``), where others say 400 or 422. So a refusal is recognised by what the
provider says — its error names ``response_format``, ``json_schema``, ``json_object`` or
structured output — whatever the status (:func:`names_response_format`, applied by the
client, which raises :class:`LLMFormatRefusedError` at once instead of retrying a "5xx").

On a refusal the same messages are asked again with the next format a server may still
honour: ``json_schema`` → ``{"type": "json_object", "schema": …}`` → no
``response_format``. llama-cpp-python turns a ``json_object``'s ``schema`` into a grammar
and constrains decoding with it (servers that do not know the key ignore it and still
answer JSON). That schema is the caller's with each length bound (``maxLength``,
``maxItems`` …) lowered to at most :data:`GRAMMAR_SAFE_BOUND`: a grammar converter unrolls
a bound into one nested rule per step, and with the proposal schema's ``maxLength: 2000``
llama.cpp refuses the grammar ("number of rules … exceeds sane defaults") and
llama-cpp-python 0.3.36's server then dies of a segmentation fault, for every caller
(1000 was accepted). A lower bound only narrows what the answer may be — it still matches
the caller's schema — and keeping the bounds keeps a small model from rambling (without
them Gemma 3 270M wrote 30 tags where 20 are allowed, or a string until ``max_tokens``).
Any other refusal (a bad key, an unknown model) is raised as it is. The answer is validated
by the caller either way (:mod:`synthorg.llm.replies` reads fences, prose and reasoning
blocks), so constrained decoding is a help, never a requirement.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from synthorg.llm.base import ChatMessage, Completion, CompletionProvider, LLMFormatRefusedError

logger = logging.getLogger(__name__)

_ABOUT_FORMAT = re.compile(
    r"response_format|json_schema|json_object|structured[ _-]output", re.IGNORECASE
)


def names_response_format(text: str) -> bool:
    """True when a provider's error message is about the request's ``response_format``
    (every provider's refusal names the field or its type: see the stand-in's profiles)."""
    return bool(_ABOUT_FORMAT.search(text))


def json_schema_format(name: str, schema: dict[str, Any], *, strict: bool = True) -> dict:
    """The ``response_format`` value asking for an answer matching ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": strict, "schema": schema},
    }


#: JSON Schema keywords a grammar converter unrolls into one nested rule per step.
LENGTH_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems"})
#: The largest bound sent as a grammar (llama-cpp-python 0.3.36: 1000 works, 2000 kills it).
GRAMMAR_SAFE_BOUND = 1000


def within_grammar_limits(schema: Any) -> Any:
    """``schema`` with every :data:`LENGTH_BOUNDS` value at most :data:`GRAMMAR_SAFE_BOUND`
    (at every depth; a property that happens to be called ``maxLength`` is left alone)."""
    if isinstance(schema, list):
        return [within_grammar_limits(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _within_limits(key, value) for key, value in schema.items()}


def _within_limits(key: str, value: Any) -> Any:
    if key in LENGTH_BOUNDS and isinstance(value, int):
        return min(value, GRAMMAR_SAFE_BOUND)
    if key == "properties" and isinstance(value, dict):
        return {name: within_grammar_limits(sub) for name, sub in value.items()}
    return within_grammar_limits(value)


def fallback_formats(response_format: dict) -> list[dict | None]:
    """The formats :func:`complete_json` tries, in order (``None``: no ``response_format``)."""
    formats: list[dict | None] = [response_format]
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        formats.append(
            {"type": "json_object", "schema": within_grammar_limits(schema)}
            if schema
            else {"type": "json_object"}
        )
    formats.append(None)
    return formats


def complete_json(
    provider: CompletionProvider,
    messages: Sequence[ChatMessage],
    *,
    response_format: dict,
    **kwargs: Any,
) -> Completion:
    """One completion asking for structured output; when the provider refuses the format,
    asked again with the next of :func:`fallback_formats`."""
    formats = fallback_formats(response_format)
    structured = [format_ for format_ in formats if format_ is not None]
    for index, response_format_ in enumerate(structured):
        try:
            return provider.complete(messages, response_format=response_format_, **kwargs)
        except LLMFormatRefusedError as exc:
            following = formats[index + 1]
            logger.info(
                "response_format %s refused (%s); asking with %s",
                response_format_.get("type"),
                exc,
                following.get("type") if following else "none",
            )
    return provider.complete(messages, **kwargs)
