"""The OpenAI-compatible chat client against a real local HTTP server."""

import pytest

from synthorg.llm import (
    ChatMessage,
    Completion,
    CompletionProvider,
    LLMNotConfiguredError,
    LLMRequestError,
    LLMResponseError,
    LLMTransientError,
    OpenAICompatibleChatClient,
    TokenUsage,
    completion_provider_from_settings,
)
from tests.support.openai_server import (
    FakeOpenAIServer,
    ScriptedResponse,
    chat_completion_payload,
    error_payload,
)

HELLO = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hello")]


@pytest.fixture
def server():
    with FakeOpenAIServer(chat_reply="hi there") as running:
        yield running


def make_client(server, **kwargs):
    sleeps: list[float] = []
    kwargs.setdefault("sleep", sleeps.append)
    client = OpenAICompatibleChatClient(server.base_url, "small-model", **kwargs)
    client.sleeps = sleeps
    return client


def test_success_returns_content_usage_and_sends_the_openai_body(server):
    recorded: list[Completion] = []
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(
            json=chat_completion_payload(
                "a summary", model="small-model-2024", prompt_tokens=42, completion_tokens=7
            )
        ),
    )
    with make_client(server, api_key="sk-test", usage_recorder=recorded.append) as client:
        assert isinstance(client, CompletionProvider)
        completion = client.complete(HELLO, max_tokens=50, temperature=0.2)

    assert completion == Completion(
        content="a summary",
        model="small-model-2024",
        provider="openai-compatible",
        usage=TokenUsage(input_tokens=42, output_tokens=7),
        finish_reason="stop",
    )
    assert recorded == [completion]
    (request,) = server.requests_to(server.CHAT_COMPLETIONS)
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json() == {
        "model": "small-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
        ],
        "max_tokens": 50,
        "temperature": 0.2,
    }


def test_a_call_may_name_another_model_and_omits_unset_options(server):
    client = make_client(server)
    completion = client.complete([ChatMessage("user", "x")], model="big-model")
    assert completion.content == "hi there"
    assert completion.model == "big-model"
    (request,) = server.requests_to(server.CHAT_COMPLETIONS)
    assert request.json() == {"model": "big-model", "messages": [{"role": "user", "content": "x"}]}
    assert "authorization" not in request.headers


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_retryable_statuses_are_retried_with_backoff(server, status):
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(status=status, json=error_payload("busy")),
        ScriptedResponse(status=status, json=error_payload("busy")),
    )
    client = make_client(server, max_retries=2, backoff_base=0.5)
    assert client.complete(HELLO).content == "hi there"
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 3
    assert client.sleeps == [0.5, 1.0]


def test_retry_after_header_is_honoured_up_to_the_cap(server):
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(status=429, json=error_payload("slow down"), headers={"Retry-After": "3"}),
        ScriptedResponse(status=429, json=error_payload("slow"), headers={"Retry-After": "99"}),
    )
    client = make_client(server, max_retries=2, backoff_base=0.5, backoff_max=8.0)
    client.complete(HELLO)
    assert client.sleeps == [3.0, 8.0]


def test_retries_exhausted_raise_a_transient_error(server):
    server.enqueue(
        server.CHAT_COMPLETIONS,
        *[ScriptedResponse(status=503, json=error_payload("down")) for _ in range(3)],
    )
    recorded = []
    client = make_client(server, max_retries=2, usage_recorder=recorded.append)
    with pytest.raises(LLMTransientError, match=r"failed after 3 attempt\(s\): HTTP 503") as info:
        client.complete(HELLO)
    assert info.value.retryable is True
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 3
    assert recorded == []


def test_timeout_is_retried_then_succeeds(server):
    server.enqueue(server.CHAT_COMPLETIONS, ScriptedResponse(delay=2.0, json={}))
    client = make_client(server, timeout=0.2, max_retries=1)
    assert client.complete(HELLO).content == "hi there"
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 2
    assert len(client.sleeps) == 1


def test_timeout_on_every_attempt_is_transient(server):
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(delay=2.0, json={}),
        ScriptedResponse(delay=2.0, json={}),
    )
    client = make_client(server, timeout=0.2, max_retries=1)
    with pytest.raises(LLMTransientError, match="ReadTimeout"):
        client.complete(HELLO)


def test_401_is_not_retried(server):
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(status=401, json=error_payload("bad key", code="invalid_api_key")),
    )
    client = make_client(server, max_retries=3)
    with pytest.raises(LLMRequestError, match="HTTP 401") as info:
        client.complete(HELLO)
    assert info.value.retryable is False
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 1
    assert client.sleeps == []


def test_malformed_json_is_a_response_error(server):
    server.enqueue(server.CHAT_COMPLETIONS, ScriptedResponse(body=b"{not json"))
    client = make_client(server)
    with pytest.raises(LLMResponseError, match="not valid JSON"):
        client.complete(HELLO)
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 1


@pytest.mark.parametrize(
    "payload",
    [{"choices": []}, {"object": "x"}, chat_completion_payload(None), [1, 2]],
)
def test_json_without_message_content_is_a_response_error(server, payload):
    server.enqueue(server.CHAT_COMPLETIONS, ScriptedResponse(json=payload))
    with pytest.raises(LLMResponseError):
        make_client(server).complete(HELLO)


def test_missing_usage_counts_as_zero_tokens(server):
    body = chat_completion_payload("ok")
    del body["usage"]
    server.enqueue(server.CHAT_COMPLETIONS, ScriptedResponse(json=body))
    assert make_client(server).complete(HELLO).usage == TokenUsage(0, 0)


def test_a_failing_usage_recorder_does_not_fail_the_call(server):
    def broken(completion):
        raise RuntimeError("ledger down")

    assert make_client(server, usage_recorder=broken).complete(HELLO).content == "hi there"


def test_repr_hides_the_key(server):
    assert "sk-secret" not in repr(make_client(server, api_key="sk-secret"))


def test_from_settings_unconfigured_raises_typed_error(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "API_KEY": "", "MODEL": "", "TIMEOUT": 5}
    with pytest.raises(LLMNotConfiguredError, match="SYNTHORG_LLM_BASE_URL"):
        completion_provider_from_settings()


def test_from_settings_builds_a_working_client(settings, server):
    settings.SYNTHORG_LLM = {
        "BASE_URL": server.base_url,
        "API_KEY": "sk-x",
        "MODEL": "m1",
        "TIMEOUT": 5,
        "MAX_RETRIES": 0,
    }
    client = completion_provider_from_settings()
    assert client.model_for() == "m1"
    assert client.complete(HELLO).model == "m1"
    assert server.requests_to(server.CHAT_COMPLETIONS)[0].headers["authorization"] == "Bearer sk-x"


def test_total_budget_bounds_a_completion_across_retries(server):
    """A server slower than the budget: one attempt, cut at the budget, no retry after it."""
    server.enqueue(server.CHAT_COMPLETIONS, *[ScriptedResponse(delay=3.0, json={})] * 4)
    client = make_client(server, timeout=10, max_retries=3, total_timeout=0.4)
    with pytest.raises(LLMTransientError, match="time budget exhausted"):
        client.complete(HELLO)
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 1
    assert client.sleeps == []


def test_settings_total_timeout_reaches_the_client(server, settings):
    settings.SYNTHORG_LLM = {
        "BASE_URL": server.base_url,
        "MODEL": "small-model",
        "TIMEOUT": 10,
        "TOTAL_TIMEOUT": 0.4,
        "MAX_RETRIES": 3,
    }
    server.enqueue(server.CHAT_COMPLETIONS, *[ScriptedResponse(delay=3.0, json={})] * 4)
    client = completion_provider_from_settings()
    with pytest.raises(LLMTransientError, match="time budget exhausted"):
        client.complete(HELLO)
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 1


def test_total_timeout_must_be_positive(server):
    with pytest.raises(ValueError, match="total_timeout must be positive"):
        OpenAICompatibleChatClient(server.base_url, "m", total_timeout=0)
