"""``complete_json``: structured output asked of every provider profile, changed only when the
provider refuses the field itself — recognised by what it says, whatever the status (the
strict stand-in, real HTTP)."""

from __future__ import annotations

import json

import pytest

from memory.procedural.domain import PROPOSAL_JSON_SCHEMA, parse_proposal
from memory.procedural.proposer import failure_payload, propose
from synthorg.llm import (
    ChatMessage,
    LLMFormatRefusedError,
    LLMRequestError,
    LLMTransientError,
    OpenAICompatibleChatClient,
)
from synthorg.llm.resolution import forget_discovered_models
from synthorg.llm.structured import (
    complete_json,
    json_schema_format,
    within_grammar_limits,
)
from tests.memory.procedural.conftest import PROPOSAL
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn

ANSWER = json.dumps(PROPOSAL)
FORMAT = json_schema_format("procedural_lesson", PROPOSAL_JSON_SCHEMA)
PROMPT = [ChatMessage("system", "Answer with ONE JSON object."), ChatMessage("user", "report")]
REPORT = {
    "task_title": "Deploy billing",
    "task_type": "deploy",
    "task_description": "",
    "outcome": "failed",
    "error_category": "timeout",
    "error_message": "helm upgrade timed out",
    "tool_calls": [],
    "retry_count": 1,
    "turn_count": 3,
    "duration_ms": 1000,
    "recovery": "",
}


@pytest.fixture(autouse=True)
def _fresh_discovery():
    forget_discovered_models()
    yield
    forget_discovered_models()


def client(llm: LLMProviderStandIn, **overrides) -> OpenAICompatibleChatClient:
    settings = llm.settings()
    return OpenAICompatibleChatClient(
        settings["BASE_URL"],
        overrides.get("model"),
        api_key=overrides.get("api_key", settings["API_KEY"]),
        timeout=5,
        total_timeout=10,
        max_retries=overrides.get("max_retries", 0),
        sleep=lambda seconds: None,
    )


#: What a server that refuses json_schema is asked next: json_object with the schema, its
#: length bounds lowered to what a grammar converter can unroll (llama-cpp-python makes it
#: a grammar).
JSON_OBJECT = {"type": "json_object", "schema": within_grammar_limits(PROPOSAL_JSON_SCHEMA)}
HONOURS_JSON_SCHEMA = sorted(p for p in PROFILES if "json_schema" in PROFILES[p].response_formats)


@pytest.mark.parametrize("profile", HONOURS_JSON_SCHEMA)
def test_every_profile_that_honours_json_schema_gets_it_and_answers_bare_json(profile):
    with LLMProviderStandIn(PROFILES[profile], answer=ANSWER) as llm:
        completion = complete_json(client(llm), PROMPT, response_format=FORMAT)
        (request,) = llm.chat_requests
    assert request.json()["response_format"] == FORMAT
    assert json.loads(completion.content) == PROPOSAL


def test_llama_cpp_pythons_500_is_a_refusal_of_json_schema_then_json_object_is_asked():
    """llama-cpp-python's server answers json_schema with HTTP 500 "Input should be 'text' or
    'json_object'". It is read as the refusal it is — not retried as a server error, however
    many retries the client has — and the same prompt is asked with json_object."""
    with LLMProviderStandIn(PROFILES["llamacpp"], answer=ANSWER) as llm:
        completion = complete_json(client(llm, max_retries=2), PROMPT, response_format=FORMAT)
        first, second = llm.chat_requests
        assert not llm.crashed
    assert first.json()["response_format"] == FORMAT
    assert second.json()["response_format"] == JSON_OBJECT
    assert second.json()["messages"] == first.json()["messages"]
    assert json.loads(completion.content) == PROPOSAL


def test_the_refusal_is_raised_as_a_format_refusal_with_what_the_provider_said():
    with LLMProviderStandIn(PROFILES["llamacpp"], answer=ANSWER) as llm:
        with pytest.raises(LLMFormatRefusedError) as refused:
            client(llm, max_retries=2).complete(PROMPT, response_format=FORMAT)
        assert len(llm.chat_requests) == 1
    assert refused.value.status == 500
    assert "Input should be 'text' or 'json_object'" in refused.value.body
    assert "HTTP 500" in str(refused.value)


def test_a_server_error_that_does_not_name_the_format_is_still_retried_as_transient():
    with LLMProviderStandIn(PROFILES["llamacpp"], answer=ANSWER) as llm:
        llm.fault = Fault.SERVER_ERROR  # 500 "llama_decode returned -1"
        with pytest.raises(LLMTransientError, match="llama_decode returned -1"):
            complete_json(client(llm, max_retries=1), PROMPT, response_format=FORMAT)
        requests = llm.chat_requests
    assert [r.json()["response_format"] for r in requests] == [FORMAT, FORMAT]


def test_a_refusal_that_is_not_about_the_format_is_not_asked_again():
    """Its context-length 400 names neither response_format nor structured output."""
    with LLMProviderStandIn(PROFILES["llamacpp"], answer=ANSWER) as llm:
        llm.fault = Fault.CONTEXT_LENGTH
        with pytest.raises(LLMRequestError, match="maximum context length") as refused:
            complete_json(client(llm), PROMPT, response_format=FORMAT)
        assert len(llm.chat_requests) == 1
    assert not isinstance(refused.value, LLMFormatRefusedError)


def test_the_full_schema_as_a_grammar_would_kill_llama_cpp_pythons_server():
    """What the length bounds are dropped for: sent as a json_object schema, maxLength 2000
    makes llama.cpp refuse the grammar and the 0.3.36 server die (SIGSEGV, exit 139; seen
    against the real one). The stand-in drops this request and every later one."""
    with LLMProviderStandIn(PROFILES["llamacpp"], answer=ANSWER) as llm:
        full = {"type": "json_object", "schema": PROPOSAL_JSON_SCHEMA}
        with pytest.raises(LLMTransientError, match="disconnected"):
            client(llm).complete(PROMPT, response_format=full)
        assert llm.crashed
        with pytest.raises(LLMTransientError):
            client(llm).complete(PROMPT)


def test_length_bounds_are_lowered_at_every_depth_and_property_names_kept():
    schema = {
        "type": "object",
        "required": ["maxLength", "steps"],
        "properties": {
            "maxLength": {"type": "string", "maxLength": 2000, "minLength": 1},
            "steps": {
                "type": "array",
                "items": {"type": "string", "maxLength": 9},
                "maxItems": 5000,
            },
        },
    }
    assert within_grammar_limits(schema) == {
        "type": "object",
        "required": ["maxLength", "steps"],
        "properties": {
            "maxLength": {"type": "string", "maxLength": 1000, "minLength": 1},
            "steps": {
                "type": "array",
                "items": {"type": "string", "maxLength": 9},
                "maxItems": 1000,
            },
        },
    }
    relaxed = within_grammar_limits(PROPOSAL_JSON_SCHEMA)["properties"]
    assert relaxed["condition"]["maxLength"] == 1000  # was 2000: the grammar that kills
    assert relaxed["tags"]["maxItems"] == PROPOSAL_JSON_SCHEMA["properties"]["tags"]["maxItems"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_server_refusing_every_format_is_asked_with_json_object_then_without_one(profile):
    with LLMProviderStandIn(PROFILES[profile], answer=ANSWER) as llm:
        llm.fault = Fault.NO_STRUCTURED_OUTPUT
        completion = complete_json(client(llm), PROMPT, response_format=FORMAT)
        first, second, third = llm.chat_requests
    assert first.json()["response_format"] == FORMAT
    assert second.json()["response_format"] == JSON_OBJECT
    assert "response_format" not in third.json()
    assert parse_proposal(completion.content).discovery == PROPOSAL["discovery"]


def test_a_server_refusing_json_object_but_not_json_schema_is_never_asked_json_object():
    """LM Studio refuses json_object (400) and honours json_schema: it gets json_schema."""
    with LLMProviderStandIn(PROFILES["lmstudio"], answer=ANSWER) as llm:
        complete_json(client(llm), PROMPT, response_format=FORMAT)
        assert [r.json()["response_format"]["type"] for r in llm.chat_requests] == ["json_schema"]


def test_other_refusals_are_not_retried_without_the_format():
    """An unknown model (404) is the provider's answer to the request, not to the format:
    asking again would only double the failed calls."""
    with LLMProviderStandIn(PROFILES["openai"], answer=ANSWER) as llm:
        with pytest.raises(LLMRequestError, match="HTTP 404"):
            complete_json(client(llm, model="no-such-model"), PROMPT, response_format=FORMAT)
        assert len(llm.chat_requests) == 1


def test_the_proposer_asks_for_the_proposal_schema():
    with LLMProviderStandIn(PROFILES["lmstudio"], answer=ANSWER) as llm:
        proposal, _ = propose(client(llm), failure_payload(REPORT))
        (request,) = llm.chat_requests
    assert request.json()["response_format"]["json_schema"]["name"] == "procedural_lesson"
    assert request.json()["response_format"]["json_schema"]["schema"] == PROPOSAL_JSON_SCHEMA
    assert proposal.action == PROPOSAL["action"]


def test_the_proposal_schema_is_strict():
    """Providers' strict mode needs every property required and no others allowed."""
    assert PROPOSAL_JSON_SCHEMA["additionalProperties"] is False
    assert sorted(PROPOSAL_JSON_SCHEMA["required"]) == sorted(PROPOSAL_JSON_SCHEMA["properties"])
