"""A strict OpenAI-compatible LLM stand-in that behaves like the providers users run.

:class:`FakeOpenAIServer` answers whatever it is asked. Real providers do not: they serve
named models and answer 404 for others, refuse ``response_format`` types they lack, wrap
answers in prose, fences or reasoning blocks, cut answers at ``max_tokens``, rate-limit,
fail, hang and trickle. :class:`LLMProviderStandIn` serves one :class:`ProviderProfile`
(modelled on the documented behaviour of OpenAI, Ollama's ``/v1``, vLLM, llama.cpp's
``llama-server`` and LM Studio) and can inject one :class:`Fault` at a time.

The *answer* (what the model means to say, as clean text) is the test's: a string, or a
function of the request body. The profile decides how it arrives on the wire.

    with LLMProviderStandIn(PROFILES["vllm"], answer=json.dumps(PROPOSAL)) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        ...
        llm.fault = Fault.HANG
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from synthorg.llm.structured import LENGTH_BOUNDS
from tests.support.openai_server import (
    FakeOpenAIServer,
    RecordedRequest,
    ScriptedResponse,
    chat_completion_payload,
)

Answer = str | Callable[[dict[str, Any]], str]


def _openai_error(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


@dataclass(frozen=True)
class ProviderProfile:
    """How one provider family behaves on the OpenAI wire.

    ``unknown_model`` is ``None`` for a server that ignores the requested name and serves
    its loaded model (llama.cpp's single-model ``llama-server``). ``context_length`` is
    ``None`` for a server that silently truncates an over-long prompt (Ollama cuts to
    ``num_ctx``). ``response_formats`` lists the ``response_format.type`` values honoured;
    any other is refused with ``refuse_format``. ``echoes_model``: the answer names the
    requested model, whichever model served it (llama-cpp-python). ``grammar_limit``: a
    ``json_object`` ``schema`` with a length bound (``maxLength``, ``maxItems`` …) at least
    this large kills the server — llama.cpp refuses the grammar its converter unrolls from it
    and llama-cpp-python 0.3.36's process then dies of a segmentation fault — so this request
    and every later one is dropped without an answer.
    """

    name: str
    models: tuple[str, ...]
    models_body: Callable[[Sequence[str]], dict]
    unknown_model: Callable[[str], ScriptedResponse] | None
    response_formats: frozenset[str]
    refuse_format: Callable[[str], ScriptedResponse]
    wrap: Callable[[str], str]
    context_length: ScriptedResponse | None
    rate_limited: ScriptedResponse
    server_error: ScriptedResponse
    reasoning: bool = False
    echoes_model: bool = False
    grammar_limit: int | None = None


THINK = (
    "<think>\nThe user wants an answer. Let me look at the evidence {not json} first.\n</think>\n\n"
)


# --- OpenAI (api.openai.com/v1) ------------------------------------------------------------

OPENAI = ProviderProfile(
    name="openai",
    models=("gpt-4o-mini",),
    models_body=lambda ids: {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": 1721172741, "owned_by": "system"} for m in ids
        ],
    },
    unknown_model=lambda model: ScriptedResponse(
        status=404,
        json=_openai_error(
            f"The model `{model}` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
    ),
    response_formats=frozenset({"text", "json_object", "json_schema"}),
    refuse_format=lambda type_: ScriptedResponse(
        status=400,
        json=_openai_error(
            f"Invalid value: '{type_}'. Supported values are: 'json_object', 'json_schema', "
            "and 'text'.",
            "invalid_request_error",
            "invalid_value",
            "response_format.type",
        ),
    ),
    wrap=lambda answer: answer,  # answers as asked
    context_length=ScriptedResponse(
        status=400,
        json=_openai_error(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 131072 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
    ),
    rate_limited=ScriptedResponse(
        status=429,
        headers={"Retry-After": "1", "x-ratelimit-remaining-requests": "0"},
        json=_openai_error(
            "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, "
            "Requested 1. Please try again in 1s.",
            "requests",
            "rate_limit_exceeded",
        ),
    ),
    server_error=ScriptedResponse(
        status=500,
        json=_openai_error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
    ),
)

# --- Ollama (/v1 compatibility endpoints) --------------------------------------------------

OLLAMA = ProviderProfile(
    name="ollama",
    models=("llama3.2:latest",),
    models_body=lambda ids: {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": 1727000000, "owned_by": "library"} for m in ids
        ],
    },
    unknown_model=lambda model: ScriptedResponse(
        status=404,
        json=_openai_error(f'model "{model}" not found, try pulling it first', "api_error", None),
    ),
    response_formats=frozenset({"text", "json_object", "json_schema"}),
    refuse_format=lambda type_: ScriptedResponse(
        status=400,
        json=_openai_error(f"invalid response_format type: {type_}", "invalid_request_error", None),
    ),
    wrap=lambda answer: f"Here is the JSON you asked for:\n\n```json\n{answer}\n```",
    context_length=None,  # Ollama truncates the prompt to num_ctx and answers
    rate_limited=ScriptedResponse(
        status=429,
        headers={"Retry-After": "1"},
        json=_openai_error("too many requests", "api_error", None),
    ),
    server_error=ScriptedResponse(
        status=503,
        json=_openai_error(
            "server busy, please try again.  maximum pending requests exceeded", "api_error", None
        ),
    ),
)

# --- vLLM (vllm serve, OpenAI-compatible server) -------------------------------------------


def _vllm_error(status: int, message: str, type_: str) -> dict:
    return {"object": "error", "message": message, "type": type_, "param": None, "code": status}


VLLM = ProviderProfile(
    name="vllm",
    models=("Qwen/Qwen3-8B",),
    models_body=lambda ids: {
        "object": "list",
        "data": [
            {
                "id": m,
                "object": "model",
                "created": 1745000000,
                "owned_by": "vllm",
                "root": m,
                "parent": None,
                "max_model_len": 32768,
                "permission": [{"id": "modelperm-1", "object": "model_permission"}],
            }
            for m in ids
        ],
    },
    unknown_model=lambda model: ScriptedResponse(
        status=404, json=_vllm_error(404, f"The model `{model}` does not exist.", "NotFoundError")
    ),
    response_formats=frozenset({"text", "json_object", "json_schema"}),
    refuse_format=lambda type_: ScriptedResponse(
        status=400,
        json=_vllm_error(400, f"Unsupported response_format type: {type_}", "BadRequestError"),
    ),
    wrap=lambda answer: answer,
    context_length=ScriptedResponse(
        status=400,
        json=_vllm_error(
            400,
            "This model's maximum context length is 32768 tokens. However, you requested "
            "40960 tokens (39960 in the messages, 1000 in the completion). Please reduce the "
            "length of the messages or completion.",
            "BadRequestError",
        ),
    ),
    rate_limited=ScriptedResponse(
        status=429,
        headers={"Retry-After": "1"},
        json=_vllm_error(429, "Too many requests", "TooManyRequestsError"),
    ),
    server_error=ScriptedResponse(
        status=500, json=_vllm_error(500, "EngineCore encountered an issue.", "InternalServerError")
    ),
    # A reasoning model (Qwen3) served without --reasoning-parser: the thinking is in content.
    reasoning=True,
)

# --- llama.cpp (llama-cpp-python's server) -----------------------------------------------
# Observed against the real server: `python -m llama_cpp.server --model <gguf>` from
# llama-cpp-python[server] 0.3.36 (PyPI) serving Gemma 3 270M Q4_K_M, 2026-12
# (docs/operating/llm-providers.md#local-llamacpp). Every request body it cannot validate —
# among them `response_format: json_schema`, which it does not know — is an HTTP 500 whose
# message is pydantic's validation error; the one 400 is the context-length refusal.

LLAMACPP_MODEL = "/srv/models/gemma-3-270m-q4_k_m.gguf"  # the id is the --model path


def _llamacpp_error(message: str, type_: str, param: str | None = None, code=None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _llamacpp_validation_error(loc: str, msg: str, input_: str, expected: str) -> dict:
    return _llamacpp_error(
        f"1 validation error:\n  {{'type': 'literal_error', 'loc': {loc}, 'msg': \"{msg}\", "
        f"'input': '{input_}', 'ctx': {{'expected': \"{expected}\"}}}}\n\n  File "
        '"/opt/llama/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in '
        "create_chat_completion\n    POST /v1/chat/completions",
        "internal_server_error",
    )


LLAMACPP = ProviderProfile(
    name="llamacpp",
    models=(LLAMACPP_MODEL,),
    models_body=lambda ids: {
        "object": "list",
        "data": [{"id": m, "object": "model", "owned_by": "me", "permissions": []} for m in ids],
    },
    unknown_model=None,  # one loaded model; any requested name is served by it (and echoed)
    response_formats=frozenset({"text", "json_object"}),
    refuse_format=lambda type_: ScriptedResponse(
        status=500,
        json=_llamacpp_validation_error(
            "('body', 'response_format', 'type')",
            "Input should be 'text' or 'json_object'",
            type_,
            "'text' or 'json_object'",
        ),
    ),
    wrap=lambda answer: (
        f"Sure! Based on the report, here is my answer: {answer}\n\nLet me know "
        "if you need anything else."
    ),
    context_length=ScriptedResponse(
        status=400,
        json=_llamacpp_error(
            "This model's maximum context length is 2048 tokens. However, you requested 3060 "
            "tokens (3010 in the messages, 50 in the completion). Please reduce the length of "
            "the messages or completion.",
            "invalid_request_error",
            "messages",
            "context_length_exceeded",
        ),
    ),
    # The server itself never rate-limits; a proxy in front of it may (this is one's 429).
    rate_limited=ScriptedResponse(
        status=429, headers={"Retry-After": "1"}, json={"detail": "Too Many Requests"}
    ),
    # Any exception while generating is a 500 with its message (e.g. a failed decode).
    server_error=ScriptedResponse(
        status=500,
        json=_llamacpp_error("llama_decode returned -1", "internal_server_error"),
    ),
    echoes_model=True,
    grammar_limit=2000,
)

# --- LM Studio (lms server, /v1) -----------------------------------------------------------

LMSTUDIO = ProviderProfile(
    name="lmstudio",
    models=("qwen2.5-7b-instruct",),
    models_body=lambda ids: {
        "data": [{"id": m, "object": "model", "owned_by": "organization_owner"} for m in ids],
        "object": "list",
    },
    unknown_model=lambda model: ScriptedResponse(
        status=404,
        json=_openai_error(
            f'Model "{model}" not found. Please check the model name and try again.',
            "invalid_request_error",
            "model_not_found",
            "model",
        ),
    ),
    # LM Studio's structured output is json_schema only; json_object is refused.
    response_formats=frozenset({"text", "json_schema"}),
    refuse_format=lambda type_: ScriptedResponse(
        status=400, json={"error": "'response_format.type' must be 'json_schema' or 'text'"}
    ),
    wrap=lambda answer: f"```\n{answer}\n```",
    context_length=ScriptedResponse(
        status=400,
        json={
            "error": "Trying to keep the first 5012 tokens when context the overflows. However, "
            "the model is loaded with context length of only 4096 tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input"
        },
    ),
    rate_limited=ScriptedResponse(
        status=429, headers={"Retry-After": "1"}, json={"error": "Too many requests"}
    ),
    server_error=ScriptedResponse(
        status=500, json={"error": "The model has crashed without additional information."}
    ),
)

PROFILES: dict[str, ProviderProfile] = {
    p.name: p for p in (OPENAI, OLLAMA, VLLM, LLAMACPP, LMSTUDIO)
}


class Fault(StrEnum):
    """One misbehaviour at a time, on ``/chat/completions`` (``NO_MODELS``: on ``/models``)."""

    FENCED = "fenced"  # ```json fence with a line of prose before it
    PROSE = "prose"  # JSON in the middle of sentences
    REASONING = "reasoning"  # <think>…</think> before the answer
    TRUNCATED = "truncated"  # cut at max_tokens: finish_reason "length"
    RATE_LIMITED_ONCE = "rate_limited_once"  # one 429 with Retry-After, then answers
    SERVER_ERROR = "server_error"  # the profile's 5xx, every time
    HANG = "hang"  # accepts the request, never answers
    TRICKLE = "trickle"  # answers one byte at a time, slower than any budget
    CONTEXT_LENGTH = "context_length"  # the profile's context-length refusal
    NO_STRUCTURED_OUTPUT = "no_structured_output"  # refuses any response_format (older builds)
    NO_MODELS = "no_models"  # GET /models lists nothing


WRAPS: dict[Fault, Callable[[str], str]] = {
    Fault.FENCED: lambda a: f"Here is the result:\n```json\n{a}\n```",
    Fault.PROSE: lambda a: f"After looking at this carefully, my answer is {a} — hope it helps.",
}


def _largest_bound(schema: Any) -> int:
    """The largest ``maxLength``/``maxItems`` (…) anywhere in a JSON Schema (0: none)."""
    if isinstance(schema, list):
        return max((_largest_bound(item) for item in schema), default=0)
    if not isinstance(schema, dict):
        return 0
    own = [v for k, v in schema.items() if k in LENGTH_BOUNDS and isinstance(v, int)]
    return max([*own, *(_largest_bound(v) for v in schema.values())], default=0)


class LLMProviderStandIn:
    """Serves ``profile`` on 127.0.0.1 (see the module docstring); ``fault`` may change
    while it runs. ``requests``/``chat_requests`` show what the client sent."""

    def __init__(self, profile: ProviderProfile, *, answer: Answer = "ok") -> None:
        self.profile = profile
        self.answer = answer
        self.fault: Fault | None = None
        #: Model names whose completions hang (accept, never answer) whatever ``fault`` is:
        #: one company's model hanging while the others answer.
        self.hanging_models: set[str] = set()
        self._rate_limited = False
        #: The server process died (``ProviderProfile.grammar_limit``): every request drops.
        self.crashed = False
        self._lock = threading.Lock()
        self.server = FakeOpenAIServer(models=profile.models)
        self.server.set_handler(FakeOpenAIServer.CHAT_COMPLETIONS, self._chat)
        self.server.set_handler(FakeOpenAIServer.MODELS, self._models)

    def __enter__(self) -> LLMProviderStandIn:
        self.server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return self.server.requests_to(FakeOpenAIServer.CHAT_COMPLETIONS)

    def settings(self, **extra: Any) -> dict[str, Any]:
        """``SYNTHORG_LLM`` as a user sets it: base URL and key, no model (discovered)."""
        return {
            "BASE_URL": self.base_url,
            "API_KEY": "sk-stand-in",
            "MODEL": "",
            "TIMEOUT": 5,
            "TOTAL_TIMEOUT": 10,
            "MAX_RETRIES": 1,
            **extra,
        }

    # --- endpoints --------------------------------------------------------------------------

    def _models(self, request: RecordedRequest) -> ScriptedResponse:
        if self.crashed:
            return ScriptedResponse(drop=True)
        ids = [] if self.fault is Fault.NO_MODELS else list(self.profile.models)
        return ScriptedResponse(json=self.profile.models_body(ids))

    def _chat(self, request: RecordedRequest) -> ScriptedResponse:
        if self.crashed:
            return ScriptedResponse(drop=True)
        body = request.json()
        profile, fault = self.profile, self.fault
        model = requested = body.get("model")
        if model not in profile.models:
            if profile.unknown_model is not None:
                return profile.unknown_model(str(model))
            model = profile.models[0]
        failure = self._fault_reply(model)
        if failure is not None:
            return failure
        response_format = body.get("response_format")
        answer = self.answer(body) if callable(self.answer) else self.answer
        if response_format is not None:
            refusal = self._format_refusal(response_format)
            if refusal is not None:
                return refusal
        content = self._content(answer, structured=response_format is not None)
        finish_reason = "stop"
        if fault is Fault.TRUNCATED:
            content, finish_reason = content[: max(1, len(content) // 2)], "length"
        if profile.echoes_model and requested:
            model = requested
        payload = chat_completion_payload(content, model=model, finish_reason=finish_reason)
        if fault is Fault.TRICKLE:
            return ScriptedResponse(body=json.dumps(payload).encode(), trickle=0.05)
        return ScriptedResponse(json=payload)

    def _fault_reply(self, model: str) -> ScriptedResponse | None:
        """What the fault answers instead of a completion (``None``: it does not, yet)."""
        profile, fault = self.profile, self.fault
        if fault is Fault.HANG or model in self.hanging_models:
            return ScriptedResponse(delay=3600)
        if fault is Fault.SERVER_ERROR:
            return profile.server_error
        if fault is Fault.RATE_LIMITED_ONCE:
            with self._lock:
                first, self._rate_limited = not self._rate_limited, True
            if first:
                return profile.rate_limited
        if fault is Fault.CONTEXT_LENGTH and profile.context_length is not None:
            return profile.context_length
        return None

    def _format_refusal(self, response_format: dict) -> ScriptedResponse | None:
        """A ``response_format`` the server refuses, or whose grammar crashes it."""
        profile = self.profile
        type_ = (response_format or {}).get("type")
        if self.fault is Fault.NO_STRUCTURED_OUTPUT or type_ not in profile.response_formats:
            return profile.refuse_format(str(type_))
        schema = response_format.get("schema")
        if profile.grammar_limit is not None and _largest_bound(schema) >= profile.grammar_limit:
            self.crashed = True  # the process is gone: nothing answers any more
            return ScriptedResponse(drop=True)
        return None

    def _content(self, answer: str, *, structured: bool) -> str:
        """The message content for ``answer``: bare under constrained decoding, else the way
        this server wraps JSON and prefixes reasoning."""
        if structured:
            return answer  # constrained decoding: the bare answer
        fault = self.fault
        if answer.lstrip()[:1] in ("{", "["):
            content = WRAPS.get(fault, self.profile.wrap)(answer)  # type: ignore[arg-type]
        else:
            content = answer  # plain-text tasks (a summary, a query) come back as text
        if self.profile.reasoning or fault is Fault.REASONING:
            content = THINK + content
        return content
