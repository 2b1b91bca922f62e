"""``complete_json``: structured output asked of every provider profile, dropped only when the
provider refuses the field itself (the strict stand-in, real HTTP)."""

from __future__ import annotations

import json

import pytest

from memory.procedural.domain import PROPOSAL_JSON_SCHEMA, parse_proposal
from memory.procedural.proposer import failure_payload, propose
from synthorg.llm import ChatMessage, LLMRequestError, OpenAICompatibleChatClient
from synthorg.llm.resolution import forget_discovered_models
from synthorg.llm.structured import complete_json, json_schema_format
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
        max_retries=0,
    )


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profile_gets_the_schema_and_answers_bare_json(profile):
    with LLMProviderStandIn(PROFILES[profile], answer=ANSWER) as llm:
        completion = complete_json(client(llm), PROMPT, response_format=FORMAT)
        (request,) = llm.chat_requests
    assert request.json()["response_format"] == FORMAT
    assert json.loads(completion.content) == PROPOSAL


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_refused_response_format_is_asked_again_without_it(profile):
    with LLMProviderStandIn(PROFILES[profile], answer=ANSWER) as llm:
        llm.fault = Fault.NO_STRUCTURED_OUTPUT
        completion = complete_json(client(llm), PROMPT, response_format=FORMAT)
        first, second = llm.chat_requests
    assert first.json()["response_format"] == FORMAT
    assert "response_format" not in second.json()
    assert parse_proposal(completion.content).discovery == PROPOSAL["discovery"]


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
