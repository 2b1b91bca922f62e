"""``memory.namespace_templates``: tuple namespaces (seed 004 D6, LangMem's
``NamespaceTemplate``), validated and rendered to the flat string a memory row stores.

A template is a tuple of parts: the first a literal **scope type** (``org``, ``user`` …), the
others literals or ``{placeholders}``. A caller names a namespace as a tuple of values, e.g.
``("org", "acme", "agent-alpha")`` or ``("user", "u-123")``; :func:`render_namespace` finds
the template by the scope type, checks the arity, the literals and each value, and joins the
parts with ``/`` (``org/acme/agent-alpha``), the form stored, searched and exported. Two
placeholders are **bound** by the server, not the caller: ``{company}`` must be the caller's
company slug and ``{agent}`` the calling agent's name (a tuple naming another company or
agent is refused), so a rendered namespace never claims someone else's scope.

Flat strings keep working unchanged (they are not templated). Pure: no Django import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field, field_validator

from synthorg.company_config.fields import FROZEN

SEPARATOR = "/"
#: what one rendered value may be: the slug-like names agents and companies already have
PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
PLACEHOLDER = re.compile(r"^\{([a-z][a-z0-9_]{0,31})\}$")
BOUND = ("company", "agent")
MAX_PARTS = 6
#: mirrors memory.core.domain.NAMESPACE_MAX_CHARS (the column's width)
NAMESPACE_MAX_CHARS = 100

EMPTY = "a namespace tuple needs at least its scope type"
UNKNOWN_SCOPE = "no namespace template has the scope type {scope!r} (known: {known})"
ARITY = "a {scope!r} namespace has {expected} parts ({template}); got {got}"
LITERAL = "part {index} of a {scope!r} namespace must be {literal!r}; got {value!r}"
BOUND_MISMATCH = "part {index} ({{{name}}}) must be your {name} {expected!r}; got {value!r}"
PART_INVALID = (
    "part {index} {value!r} is not a valid namespace value (1–64 letters, digits, "
    "'_', '.', ':', '@' or '-', starting with a letter or digit)"
)
TOO_LONG = "the rendered namespace {rendered!r} is longer than {limit} characters"
NOT_TEXT = "every part of a namespace tuple must be a string"


class NamespaceError(ValueError):
    """A tuple namespace that does not fit the company's templates; ``code`` says how."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class NamespaceTemplate(BaseModel):
    """One template: ``("org", "{company}", "{agent}")``."""

    model_config = FROZEN

    parts: tuple[str, ...] = Field(min_length=1, max_length=MAX_PARTS)

    @field_validator("parts")
    @classmethod
    def _valid_parts(cls, parts: tuple[str, ...]) -> tuple[str, ...]:
        if PLACEHOLDER.match(parts[0]) or not PART.match(parts[0]):
            raise ValueError(f"the first part must be a literal scope type; got {parts[0]!r}")
        names: list[str] = []
        for part in parts[1:]:
            match = PLACEHOLDER.match(part)
            if match:
                names.append(match.group(1))
            elif not PART.match(part):
                raise ValueError(f"{part!r} is neither a literal nor a {{placeholder}}")
        if len(set(names)) != len(names):
            raise ValueError("names a placeholder twice")
        return parts

    @property
    def scope(self) -> str:
        return self.parts[0]

    def __str__(self) -> str:
        return "(" + ", ".join(self.parts) + ")"

    def render(self, values: Sequence[str], *, bound: Mapping[str, str]) -> str:
        if len(values) != len(self.parts):
            raise NamespaceError(
                ARITY.format(
                    scope=self.scope, expected=len(self.parts), template=self, got=len(values)
                ),
                code="namespace_arity",
            )
        for index, (part, value) in enumerate(zip(self.parts, values, strict=True)):
            match = PLACEHOLDER.match(part)
            if match is None:
                if value != part:
                    raise NamespaceError(
                        LITERAL.format(index=index, scope=self.scope, literal=part, value=value),
                        code="namespace_literal_mismatch",
                    )
                continue
            name = match.group(1)
            if name in bound and value != bound[name]:
                raise NamespaceError(
                    BOUND_MISMATCH.format(
                        index=index, name=name, expected=bound[name], value=value
                    ),
                    code="namespace_bound_mismatch",
                )
            if not PART.match(value):
                raise NamespaceError(
                    PART_INVALID.format(index=index, value=value), code="namespace_part_invalid"
                )
        rendered = SEPARATOR.join(values)
        if len(rendered) > NAMESPACE_MAX_CHARS:
            raise NamespaceError(
                TOO_LONG.format(rendered=rendered, limit=NAMESPACE_MAX_CHARS),
                code="namespace_too_long",
            )
        return rendered


#: seed 004 D6's two examples
DEFAULT_TEMPLATES = (
    NamespaceTemplate(parts=("org", "{company}", "{agent}")),
    NamespaceTemplate(parts=("user", "{user_id}")),
)


def unique_scopes(templates: tuple[NamespaceTemplate, ...]) -> tuple[NamespaceTemplate, ...]:
    scopes = [template.scope for template in templates]
    duplicates = sorted({scope for scope in scopes if scopes.count(scope) > 1})
    if duplicates:
        raise ValueError(f"two templates have the scope type {duplicates[0]!r}")
    return templates


def render_namespace(
    value: str | Sequence[str],
    *,
    templates: Sequence[NamespaceTemplate],
    bound: Mapping[str, str],
) -> str:
    """The flat namespace of ``value``: a string as it is (back-compatible), a tuple/list
    rendered through the template of its scope type (raises :class:`NamespaceError`)."""
    if isinstance(value, str):
        return value
    values = list(value)
    if not values:
        raise NamespaceError(EMPTY, code="namespace_empty")
    if not all(isinstance(v, str) for v in values):
        raise NamespaceError(NOT_TEXT, code="namespace_part_invalid")
    by_scope = {template.scope: template for template in templates}
    template = by_scope.get(values[0])
    if template is None:
        known = ", ".join(repr(scope) for scope in by_scope) or "none configured"
        raise NamespaceError(
            UNKNOWN_SCOPE.format(scope=values[0], known=known), code="namespace_scope_unknown"
        )
    return template.render(values, bound=bound)
