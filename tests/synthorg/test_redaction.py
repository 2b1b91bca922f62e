"""The redaction module: each built-in pattern, what it keeps, and configuration."""

import pytest

from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.redaction import BUILTIN_NAMES, Redactor, default_redactor, redactor_for


def redact(text: str) -> str:
    return default_redactor().redact(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "curl -H 'Authorization: Bearer abcDEF123456.xyz-_~+/=' x",
            "curl -H 'Authorization: Bearer [REDACTED:bearer_token]' x",
        ),
        (
            "openai said 401 for sk-proj-AbCdEfGhIjKlMnOpQrStUv123",
            "openai said 401 for [REDACTED:sk_key]",
        ),
        ("key sk-ant-api03-0123456789abcdefXYZ done", "key [REDACTED:sk_key] done"),
        ("id AKIAIOSFODNN7EXAMPLE used", "id [REDACTED:aws_access_key_id] used"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:aws_secret_access_key]",
        ),
        (
            "connect postgres://billing:hunter2pass@db.internal:5432/app failed",
            "connect postgres://billing:[REDACTED:url_password]@db.internal:5432/app failed",
        ),
        ("mail ana.lopez+ops@example.co.uk now", "mail [REDACTED:email] now"),
        ("password=Sup3rSecret! retry", "password=[REDACTED:credential_assignment] retry"),
        ('{"api_key": "abcd1234efgh"}', '{"api_key": "[REDACTED:credential_assignment]"}'),
        ("token: ghp_" + "a" * 36, "token: [REDACTED:github_token]"),
        ("slack xoxb-1234567890-abcdef", "slack [REDACTED:slack_token]"),
        ("agent key sok_ab12cd_9f8e7d6c5b4a3", "agent key [REDACTED:agent_key]"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig-nature_x end",
            "jwt [REDACTED:jwt] end",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- after",
            "[REDACTED:private_key] after",
        ),
    ],
)
def test_each_builtin_pattern(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "helm upgrade timed out after 300s",
        "see https://example.com/docs/page?x=1",
        "the task took 12 turns; skip-list size 42",
        "bearer of bad news",  # too short to be a token
        "user@ alone and @mention",
    ],
)
def test_ordinary_text_is_untouched(text):
    assert redact(text) == text


def test_counts_per_pattern():
    result = default_redactor().redact_counted("a@b.io and c@d.io with sk-" + "x" * 20)
    assert result.counts == {"sk_key": 1, "email": 2}
    assert result.total == 3


def test_nested_values_are_redacted_and_keys_kept():
    counts: dict[str, int] = {}
    value = {"password": "x", "calls": [{"error": "mail bob@corp.com"}], "n": 3}
    assert default_redactor().redact_value(value, counts) == {
        "password": "x",
        "calls": [{"error": "mail [REDACTED:email]"}],
        "n": 3,
    }
    assert counts == {"email": 1}


def test_disable_and_extend():
    redactor = Redactor.configured(disabled=["email"], extra={"ticket": r"TICKET-\d+"})
    assert redactor.redact("ana@example.com TICKET-42") == "ana@example.com [REDACTED:ticket]"


def test_configuration_errors():
    with pytest.raises(ValueError, match="unknown redaction pattern"):
        Redactor.configured(disabled=["nope"])
    with pytest.raises(ValueError, match="not a valid regex"):
        Redactor.configured(extra={"bad": "("})


def test_company_config_section():
    config = parse_company_config(
        {
            "memory": {
                "redaction": {"disabled_patterns": ["email"], "extra_patterns": {"t": "T-\\d+"}}
            }
        }
    )
    assert redactor_for(config.memory.redaction).redact("a@b.io T-1") == "a@b.io [REDACTED:t]"
    assert redactor_for(parse_company_config({}).memory.redaction) is default_redactor()
    with pytest.raises(CompanyConfigError) as info:
        parse_company_config({"memory": {"redaction": {"disabled_patterns": ["x"]}}})
    assert info.value.errors[0]["field"] == "memory.redaction.disabled_patterns"
    with pytest.raises(CompanyConfigError) as info:
        parse_company_config({"memory": {"redaction": {"extra_patterns": {"bad": "("}}}})
    assert info.value.errors[0]["field"] == "memory.redaction.extra_patterns.bad"


def test_builtin_names_are_documented_set():
    assert {
        "private_key",
        "url_password",
        "bearer_token",
        "jwt",
        "sk_key",
        "agent_key",
        "aws_access_key_id",
        "aws_secret_access_key",
        "github_token",
        "slack_token",
        "credential_assignment",
        "email",
    } == BUILTIN_NAMES
