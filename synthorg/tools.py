"""Agent tools: one catalogue that the tool-call endpoint and the MCP server both serve.

A tool is a name, a description written for a model, a pydantic model of its arguments
(from which the JSON Schema is generated) and a handler that calls the apps' services as the
acting principal. Apps register their tools in ``AppConfig.ready`` (the way they register
schedules); the kernel never imports an app.

:func:`tool_call` is the one dispatcher: it validates the arguments (400
``invalid_tool_arguments`` naming each field), applies the destructive-operation guardrail
(a literal ``confirm: true`` and a non-blank ``reason``) and runs the handler. Interfaces
(REST, MCP, stdio) only translate its result or its :class:`DomainError`. Arguments pass
the same input-safety check as every REST body (:mod:`synthorg.api.input_safety`: NUL,
lone surrogates, non-finite numbers, depth) before anything else, so an MCP call can no
more reach PostgreSQL with text it cannot store than a REST call can.

Pure module: no Django import.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, ValidationError

from synthorg.api.input_safety import UnsafeInputError, check_json_value
from synthorg.db.replicas import recording_writes
from synthorg.errors import InvalidInputError, NotFoundError
from synthorg.strict_numbers import StrictNumbersModel

UNKNOWN_TOOL = "No tool named {name!r}."
ARGUMENTS_NOT_OBJECT = "arguments must be a JSON object."
CONFIRM_REQUIRED = (
    "This tool deletes data: call it again with confirm: true and a non-blank reason."
)
REASON_REQUIRED = "reason must not be blank: say why this data should be deleted."

GUARDRAIL_PROPERTIES = {
    "confirm": {
        "type": "boolean",
        "const": True,
        "description": "Must be literally true: you confirm this deletes data for good.",
    },
    "reason": {
        "type": "string",
        "minLength": 1,
        "description": "Why the data should be deleted; recorded in the audit trail.",
    },
}


class ToolArguments(StrictNumbersModel):
    """Base of every tool's argument model: unknown arguments are refused, and numbers must
    be JSON numbers (``true`` or ``"60"`` for an integer is refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DestructiveArguments(ToolArguments):
    """Arguments of a tool that deletes data: the guardrail pair, checked by the dispatcher."""

    confirm: bool = False
    reason: str = ""


@dataclass(frozen=True)
class ToolResult:
    content: str  # text for the model
    data: Any  # structured result (JSON-serialisable)


@dataclass(frozen=True)
class Confirmation:
    """The guardrail of a destructive call: who, and why (``confirm`` was literally true)."""

    reason: str
    via: str


@dataclass(frozen=True)
class ToolContext:
    """Who is calling and through which interface (``rest``, ``mcp`` or ``stdio``)."""

    principal: Any
    via: str = "rest"
    confirmation: Confirmation | None = None


Handler = Callable[[ToolContext, Any], ToolResult]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[ToolArguments]
    handler: Handler = field(compare=False, repr=False)
    group: str = "memory"  # catalogue section: memory, shared, org, self_editing ...

    @property
    def destructive(self) -> bool:
        return issubclass(self.arguments, DestructiveArguments)

    def input_schema(self) -> dict[str, Any]:
        """JSON Schema (draft 2020-12 subset OpenAI function calling accepts) of the arguments."""
        schema = _inline(self.arguments.model_json_schema())
        schema.pop("title", None)
        schema.pop("description", None)
        properties = schema.setdefault("properties", {})
        for prop in properties.values():
            prop.pop("title", None)
        required = list(schema.get("required", []))
        if self.destructive:
            properties.update(copy.deepcopy(GUARDRAIL_PROPERTIES))
            required += [name for name in GUARDRAIL_PROPERTIES if name not in required]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def openai_definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema(),
            },
        }


_registry: dict[str, ToolSpec] = {}


def register_tool(spec: ToolSpec) -> None:
    _registry[spec.name] = spec


def registered_tools(names: Iterable[str] | None = None) -> list[ToolSpec]:
    """Every registered tool (in registration order), or those named, in ``names`` order."""
    if names is None:
        return list(_registry.values())
    return [_registry[name] for name in names if name in _registry]


def tool_spec(name: str) -> ToolSpec:
    try:
        return _registry[name]
    except (KeyError, TypeError):
        raise NotFoundError(UNKNOWN_TOOL.format(name=name), code="unknown_tool") from None


def tool_call(
    *, principal: Any, name: str, arguments: Mapping[str, Any] | None, via: str = "rest"
) -> ToolResult:
    """Validate ``arguments`` for tool ``name`` and run it as ``principal``."""
    spec = tool_spec(name)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise InvalidInputError(
            ARGUMENTS_NOT_OBJECT,
            code="invalid_tool_arguments",
            errors=[{"field": "arguments", "message": ARGUMENTS_NOT_OBJECT, "code": "type"}],
        )
    check_arguments(arguments)
    parsed = parse_arguments(spec.arguments, arguments)
    confirmation = None
    if spec.destructive:
        confirmation = require_confirmation(
            confirm=arguments.get("confirm"), reason=parsed.reason, via=via
        )
    # MCP and stdio calls do not pass through the request middleware: fence their writes here.
    with recording_writes(lambda: getattr(principal, "pk", None)):
        return spec.handler(ToolContext(principal, via, confirmation), parsed)


def require_confirmation(*, confirm: Any, reason: Any, via: str) -> Confirmation:
    """The guardrail triple's last two parts (the principal is the caller's identity)."""
    if confirm is not True:  # literally true: "yes", 1 or "true" do not count
        raise InvalidInputError(
            CONFIRM_REQUIRED,
            code="confirmation_required",
            errors=[{"field": "confirm", "message": CONFIRM_REQUIRED, "code": "required"}],
        )
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError(
            REASON_REQUIRED,
            code="reason_required",
            errors=[{"field": "reason", "message": REASON_REQUIRED, "code": "blank"}],
        )
    return Confirmation(reason=reason.strip(), via=via)


def check_arguments(arguments: Mapping[str, Any]) -> None:
    """400 (``invalid_characters``, ``json_too_deep``, ``number_out_of_range``) naming the
    argument, for what no handler may see."""
    try:
        check_json_value(dict(arguments))
    except UnsafeInputError as exc:
        raise InvalidInputError(
            f"{exc.field}: {exc.message}" if exc.field else exc.message,
            code=exc.code,
            errors=[{"field": exc.field, "message": exc.message, "code": exc.code}],
        ) from None


def parse_arguments(model: type[ToolArguments], arguments: Mapping[str, Any]) -> Any:
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            loc = ".".join(str(part) for part in error["loc"]) or None
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown argument"
            errors.append({"field": loc, "message": message, "code": error["type"]})
        first = errors[0]
        where = f"{first['field']}: " if first["field"] else ""
        raise InvalidInputError(
            f"{where}{first['message']}", code="invalid_tool_arguments", errors=errors
        ) from None


def json_ready(data: Any) -> Any:
    """A serializer's output (ordered dicts, lazy strings) as plain JSON types."""
    return json.loads(json.dumps(data, default=str))


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve local ``$defs`` references: function-calling clients want flat schemas."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = copy.deepcopy(defs[ref.removeprefix("#/$defs/")])
                target.pop("title", None)
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **rest})
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)
