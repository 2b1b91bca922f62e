"""Redaction of secrets and e-mail addresses from text that leaves an agent's control.

Pure module (no Django import). Everything an agent sends that the service keeps or passes on
(execution reports, LLM prompts, webhook bodies) goes through one :class:`Redactor` first, so
a key pasted into an error message is never stored, never sent to a model, never echoed.

Each pattern replaces what it matches with ``[REDACTED:<name>]``; where the match has a label
worth keeping (``password=…``, ``Bearer …``, ``user:…@host``) only the secret part goes.
Patterns run in order: the specific ones (URL credentials, bearer tokens, known key formats)
before the generic ``key = value`` assignment and the e-mail address, so the most precise
name wins and an address in ``user:pw@host`` is not mistaken for an e-mail.

A redactor is configurable: drop built-in patterns by name (``disabled``) and add your own
(``extra``, run after the built-ins). :func:`redactor_for` builds one from the company
config's ``memory.redaction`` section.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class RedactionPattern:
    """``regex`` matches a secret. If it has a group named ``secret``, only that group is
    replaced (the rest of the match, e.g. a label, is kept); otherwise the whole match."""

    name: str
    regex: re.Pattern[str]

    @classmethod
    def compile(cls, name: str, pattern: str, flags: int = 0) -> RedactionPattern:
        return cls(name=name, regex=re.compile(pattern, flags))

    @property
    def marker(self) -> str:
        return f"[REDACTED:{self.name}]"


_KEY_NAMES = (
    r"api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|"
    r"password|passwd|pwd|passphrase|access[_-]?token|auth[_-]?token|refresh[_-]?token|token"
)

BUILTIN_PATTERNS: tuple[RedactionPattern, ...] = (
    RedactionPattern.compile(
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        re.DOTALL,
    ),
    # scheme://user:password@host — keep the user and host, drop the password.
    RedactionPattern.compile(
        "url_password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/?#@]+:(?P<secret>[^\s@/?#]+)@"
    ),
    RedactionPattern.compile(
        "bearer_token", r"\b[Bb]earer\s+(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)", 0
    ),
    RedactionPattern.compile(
        "jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]+"
    ),
    # OpenAI / Anthropic style keys: sk-…, sk-proj-…, sk-ant-…
    RedactionPattern.compile("sk_key", r"\bsk-[A-Za-z0-9_\-]{16,}"),
    # This service's own agent keys (sok_<prefix>_<secret>).
    RedactionPattern.compile("agent_key", r"\bsok_[A-Za-z0-9]+_[A-Za-z0-9_\-]{8,}"),
    RedactionPattern.compile(
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[0-9A-Z]{16}\b",
    ),
    RedactionPattern.compile(
        "aws_secret_access_key",
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})",
    ),
    RedactionPattern.compile("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    RedactionPattern.compile("slack_token", r"\bxox[abeoprs]-[A-Za-z0-9\-]{10,}"),
    # key=value / key: value / "key": "value" with a secret-sounding key name.
    RedactionPattern.compile(
        "credential_assignment",
        rf"(?i)\b(?:{_KEY_NAMES})\b[\"']?\s*[:=]\s*[\"']?(?!\[REDACTED)(?P<secret>[^\s\"',;&}}]{{4,}})",
    ),
    RedactionPattern.compile(
        "email",
        r"(?<![\w.%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b",
    ),
)

BUILTIN_NAMES: frozenset[str] = frozenset(p.name for p in BUILTIN_PATTERNS)


@dataclass(frozen=True)
class RedactionResult:
    text: str
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class Redactor:
    """Applies an ordered list of :class:`RedactionPattern` to text (or JSON-like values)."""

    def __init__(self, patterns: Iterable[RedactionPattern] = BUILTIN_PATTERNS) -> None:
        self.patterns = tuple(patterns)

    @classmethod
    def configured(
        cls,
        *,
        disabled: Iterable[str] = (),
        extra: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> Redactor:
        """The built-ins minus ``disabled`` (names), then ``extra`` ``{name: regex}``.

        Raises ``ValueError`` for an unknown built-in name or an invalid regex.
        """
        disabled = set(disabled)
        unknown = disabled - BUILTIN_NAMES
        if unknown:
            raise ValueError(f"unknown redaction pattern(s): {', '.join(sorted(unknown))}")
        items = extra.items() if isinstance(extra, Mapping) else extra
        added = []
        for name, pattern in items:
            try:
                added.append(RedactionPattern.compile(name, pattern))
            except re.error as exc:
                raise ValueError(
                    f"redaction pattern {name!r} is not a valid regex: {exc}"
                ) from None
        return cls([p for p in BUILTIN_PATTERNS if p.name not in disabled] + added)

    def redact(self, text: str) -> str:
        return self.redact_counted(text).text

    def redact_counted(self, text: str) -> RedactionResult:
        counts: dict[str, int] = {}
        for pattern in self.patterns:
            text, n = pattern.regex.subn(_replacer(pattern), text)
            if n:
                counts[pattern.name] = counts.get(pattern.name, 0) + n
        return RedactionResult(text=text, counts=counts)

    def redact_value(self, value: Any, counts: dict[str, int] | None = None) -> Any:
        """Redact every string inside ``value`` (dicts, lists, tuples; keys are kept).

        ``counts``, when given, accumulates the number of redactions per pattern.
        """
        if isinstance(value, str):
            result = self.redact_counted(value)
            if counts is not None:
                for name, n in result.counts.items():
                    counts[name] = counts.get(name, 0) + n
            return result.text
        if isinstance(value, Mapping):
            return {key: self.redact_value(item, counts) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(item, counts) for item in value]
        return value


def _replacer(pattern: RedactionPattern):
    marker = pattern.marker
    if "secret" not in pattern.regex.groupindex:
        return lambda match: marker

    def replace(match: re.Match[str]) -> str:
        start, end = match.span("secret")
        offset = match.start()
        whole = match.group(0)
        return whole[: start - offset] + marker + whole[end - offset :]

    return replace


@lru_cache(maxsize=1)
def default_redactor() -> Redactor:
    """Every built-in pattern."""
    return Redactor()


@lru_cache(maxsize=64)
def _cached(disabled: tuple[str, ...], extra: tuple[tuple[str, str], ...]) -> Redactor:
    return Redactor.configured(disabled=disabled, extra=extra)


def redactor_for(config: Any | None) -> Redactor:
    """The redactor a ``RedactionConfig`` (``disabled_patterns``, ``extra_patterns``) asks for.

    ``None`` gives :func:`default_redactor`. Cached per distinct configuration.
    """
    if config is None:
        return default_redactor()
    disabled = tuple(sorted(config.disabled_patterns))
    extra = tuple(sorted(dict(config.extra_patterns).items()))
    if not disabled and not extra:
        return default_redactor()
    return _cached(disabled, extra)
