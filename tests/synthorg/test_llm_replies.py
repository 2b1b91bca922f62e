"""The one tolerant reply parser and the one model resolution (pure functions)."""

import pytest

from synthorg.llm import LLMConfigurationError, resolve_model
from synthorg.llm.replies import ReplyFormatError, reply_json, reply_text
from synthorg.llm.resolution import forget_discovered_models
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        'Here is the JSON you asked for:\n\n```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        'Sure! Based on the report, see [1]: {"a": 1}\n\nLet me know.',
        '<think>\nI should answer {not json} carefully.\n</think>\n\n{"a": 1}',
        '<THINKING>x</THINKING>```json\n{"a": 1}\n```',
        '```python\nprint({"b": 2})\n```\n```json\n{"a": 1}\n```',
    ],
)
def test_reply_json_finds_the_object_wherever_the_model_put_it(reply):
    assert reply_json(reply, expect=dict) == {"a": 1}


@pytest.mark.parametrize(
    ("reply", "truncated", "reason"),
    [
        ("I cannot help with that.", False, "the reply contains no JSON object"),
        ("[1, 2]", False, "the reply contains no JSON object"),
        (
            '{"a": ',
            True,
            "the reply was cut off at max_tokens (finish_reason: length) before its JSON ended",
        ),
        ("<think>still thinking", False, "the reply is a reasoning block with no answer after it"),
        ("", False, "the reply contains no JSON object"),
    ],
)
def test_reply_json_says_why_it_found_nothing(reply, truncated, reason):
    with pytest.raises(ReplyFormatError) as exc:
        reply_json(reply, truncated=truncated, expect=dict)
    assert str(exc.value) == reason


def test_reply_text_drops_reasoning_blocks():
    assert reply_text("<think>a\nb</think>\n\nbilling deploy day") == "billing deploy day"
    assert reply_text("<think>never closed") == ""


@pytest.mark.parametrize(
    ("requested", "default", "expected"),
    [
        ("big-model", "small-model", "big-model"),
        ("example-small-001", "small-model", "small-model"),
        (None, "small-model", "small-model"),
        ("  ", None, "gpt-4o-mini"),
        ("example-small-001", "example-small-001", "gpt-4o-mini"),
        # the seeds' other example (dual_mode's summarization_model) and their form
        ("example-medium-001", "small-model", "small-model"),
        (" example-large-002 ", None, "gpt-4o-mini"),
        ("example-medium-001", "example-medium-001", "gpt-4o-mini"),
        # not of the seeds' form: real names, sent as they are
        ("example-medium", "small-model", "example-medium"),
        ("my-example-small-001", None, "my-example-small-001"),
    ],
)
def test_resolve_model(requested, default, expected):
    forget_discovered_models()
    with LLMProviderStandIn(PROFILES["openai"]) as llm:
        got = resolve_model(
            requested, default=default, base_url=llm.base_url, api_key=None, timeout=5
        )
    assert got == expected


def test_resolve_model_without_any_model_is_a_configuration_error():
    forget_discovered_models()
    with LLMProviderStandIn(PROFILES["llamacpp"]) as llm:
        llm.fault = Fault.NO_MODELS
        with pytest.raises(LLMConfigurationError) as exc:
            resolve_model(None, default=None, base_url=llm.base_url, api_key=None, timeout=5)
        assert str(exc.value).endswith(f"GET {llm.base_url}/models lists no model")
    forget_discovered_models()
