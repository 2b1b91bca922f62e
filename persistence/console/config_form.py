"""The company configuration as a form: a JSON schema for the django-jsonform widget, built
from the pydantic config models, and the way a submitted document becomes a config save.

What the form shows is what does something here. Left out, each for a stated reason:

* :data:`RECORDED_ONLY` — accepted so the spec's files load, never read by this service (or
  fixed to one value): a save keeps the stored value.
* :data:`MIRRORED` — ``memory.options`` repeats three consolidation fields; the form edits
  them under ``memory.consolidation`` and the config derives the mirrors.
* :data:`ELSEWHERE` — ``org_memory.core_policies`` is edited on the Core policies page; a
  form save leaves it out, so the policies are untouched.

The save itself is :func:`persistence.services.companies.company_config_set` with the
revision the editor loaded (the one write path, 409 on a stale revision, audited with a diff).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django import forms
from django_jsonform.constants import JOIN_SYMBOL
from django_jsonform.widgets import JSONFormWidget

from persistence.console.config_docs import field_help, field_label, plain
from synthorg.company_config import CompanyConfig, parse_company_config

RECORDED_ONLY = (
    "memory.backend",
    "memory.storage",
    "memory.procedural.evolver.requires_human_approval",
    "org_memory.backend",
    "org_memory.extended_store.backend",
)
MIRRORED = (
    "memory.options.retention_days",
    "memory.options.max_memories_per_agent",
    "memory.options.consolidation_interval",
)
ELSEWHERE = ("org_memory.core_policies",)
# Accepted only unset (synthorg.company_config: config_value_not_offered): nothing to edit.
UNSET_ONLY = ("memory.embedder.provider",)
LEFT_OUT = RECORDED_ONLY + MIRRORED + ELSEWHERE + UNSET_ONLY

NULLABLE = "x-nullable"  # marks a field whose empty input means ``null`` (widget ignores it)


def _plain(text: str) -> str:
    """Help text without reStructuredText/Markdown literals (shown verbatim by the widget)."""
    return plain(text.replace("``", "`"))


def _default_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value in ([], {}):
        return "empty"
    return str(value)


def _resolve(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]])
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, defs)
    return {key: _resolve(value, defs) for key, value in node.items()}


def _widget_node(node: dict, name: str, path: str) -> dict | None:
    """One schema node as the widget reads it: ``None`` when the form leaves it out."""
    if path in LEFT_OUT or "const" in node:
        return None
    out: dict[str, Any] = {}
    node, nullable = _unwrap_optional(node)
    if nullable is not None:
        out[NULLABLE] = nullable
    kind = node.get("type")
    out["type"] = kind or "string"
    if name:  # a map's values take no title: the widget shows each key as its title
        out["title"] = field_label(name)
    help_text = _help_text(node, kind, path=path, nullable=bool(nullable))
    if help_text:
        out["help_text"] = help_text
    for key in ("enum", "minimum", "maximum", "minLength", "maxLength"):
        if key in node:
            out[key] = node[key]
    if kind == "object" and "properties" in node:
        _add_sections(out, node, path)
    elif kind == "object":  # a mapping with free keys (write rules, extra patterns)
        _add_free_keys(out, node, path)
    elif kind == "array":
        out["items"] = _widget_node(node.get("items") or {}, "item", f"{path}.*") or {}
    return out


def _unwrap_optional(node: dict) -> tuple[dict, bool | None]:
    """An ``anyOf`` of one type (and maybe ``null``) as that type, with whether ``null`` was
    one of the branches (``None``: the node is not such an ``anyOf``)."""
    branches = node.get("anyOf")
    if not branches:
        return node, None
    real = [b for b in branches if b.get("type") != "null"]
    if len(real) != 1:
        return node, None
    merged = {**real[0], **{k: v for k, v in node.items() if k != "anyOf"}}
    return merged, len(real) < len(branches)


def _help_text(node: dict, kind: str | None, *, path: str, nullable: bool) -> str:
    """A field's meaning (its description, else what ``docs/operating/configuration.md``
    says of it), its YAML key and default, and (``nullable``) that empty means none."""
    parts = []
    meaning = _plain(node.get("description") or "") or field_help(path)
    if meaning and (kind != "object" or "properties" not in node):
        parts.append(meaning if meaning.endswith((".", "…")) else meaning + ".")
    if path and "*" not in path and (kind != "object" or "properties" not in node):
        yaml = f"YAML: {path}"
        if "default" in node:
            yaml += f"; default: {_default_text(node['default'])}"
        parts.append(yaml + ".")
    if nullable:
        parts.append("Leave empty for none.")
    return " ".join(parts)


def _add_sections(out: dict[str, Any], node: dict, path: str) -> None:
    """An object with named fields: each field the form shows, and the first paragraph of
    the object's description."""
    out["properties"] = {}
    for key, child in node["properties"].items():
        widget = _widget_node(child, key, f"{path}.{key}" if path else key)
        if widget is not None:
            out["properties"][key] = widget
    if node.get("description"):
        out["description"] = _plain(node["description"].split("\n\n")[0])


def _add_free_keys(out: dict[str, Any], node: dict, path: str) -> None:
    """A mapping with free keys: its value widget, and the allowed keys in the help text."""
    out["properties"] = {}  # the widget requires the key; the keys are added by hand
    values = node.get("additionalProperties") or {"type": "string"}
    out["additionalProperties"] = _widget_node(values, "", f"{path}.*") or {}
    names = node.get("propertyNames") or {}
    if "enum" in names:
        out["help_text"] = " ".join(
            [out.get("help_text", ""), "Keys: " + ", ".join(names["enum"]) + "."]
        ).strip()


def config_form_schema() -> dict:
    """The widget's schema: :class:`CompanyConfig`'s JSON schema with references inlined,
    optional fields as their type (empty means none), defaults in the help text, and the
    :data:`LEFT_OUT` fields absent."""
    raw = CompanyConfig.model_json_schema()
    resolved = _resolve({k: v for k, v in raw.items() if k != "$defs"}, raw.get("$defs", {}))
    schema = _widget_node(resolved, "Company configuration", "")
    schema.pop("help_text", None)
    schema["title"] = "Company configuration"
    schema["description"] = (
        "Sections fold with [-] and open with [+]; each field's help gives its YAML key and "
        "default."
    )
    return schema


def _leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths of a config document's values (a list or an empty mapping is one value)."""
    if isinstance(data, Mapping) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}


def changed_from_default(editing: Mapping[str, Any]) -> list[str]:
    """The dotted paths of the fields the form shows whose value differs from the default
    config's (what the form highlights), sorted."""
    defaults = _leaves(form_initial(parse_company_config({}).model_dump(mode="json")))
    current = _leaves(form_initial(editing))
    paths = {path for path, value in current.items() if defaults.get(path, object()) != value}
    return sorted(paths | {path for path in defaults if path not in current})


def _pluck(data: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _drop(data: dict, path: str) -> None:
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(last, None)


def _put(data: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """Empty inputs of optional fields become ``None`` (the widget sends ``""``), and an
    optional section whose fields are all empty becomes ``None``."""
    if schema.get(NULLABLE) and value in ("", None):
        return None
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties") or {}
        cleaned = {key: _nulls(item, props.get(key, extra)) for key, item in value.items()}
        if schema.get(NULLABLE) and props and all(v is None for v in cleaned.values()):
            return None  # an optional section left empty (e.g. no embedder override)
        return cleaned
    if isinstance(value, list):
        return [_nulls(item, schema.get("items") or {}) for item in value]
    return value


def _arrays_filled(value: Any, schema: Mapping[str, Any]) -> Any:
    """A list field missing from an object (a rule serialised without its empty lists) is
    given ``[]``: the widget cannot render an array without data."""
    if not isinstance(value, dict):
        return value
    props = schema.get("properties") or {}
    extra = schema.get("additionalProperties") or {}
    filled = {key: _arrays_filled(item, props.get(key, extra)) for key, item in value.items()}
    for key, node in props.items():
        if key not in filled and node.get("type") == "array":
            filled[key] = []
    return filled


def form_initial(editing: Mapping[str, Any]) -> dict:
    """What the form shows of the config as editors see it (``company_config_for_editing``)."""
    data = copy.deepcopy(dict(editing))
    for path in LEFT_OUT:
        _drop(data, path)
    return _arrays_filled(data, config_form_schema())


def config_from_form(submitted: Mapping[str, Any], *, stored: Mapping[str, Any]) -> dict:
    """The document to save: the form's fields, the :data:`RECORDED_ONLY` values as stored
    (``stored``: the stored config, normalised), mirrors and core policies left out."""
    data = _nulls(copy.deepcopy(dict(submitted)), config_form_schema())
    for path in MIRRORED + ELSEWHERE:
        _drop(data, path)
    for path in RECORDED_ONLY:
        found, value = _pluck(stored, path)
        if found:
            _put(data, path, copy.deepcopy(value))
    return data


def error_map(errors: list[dict]) -> dict[str, list[str]]:
    """The config's field errors (``memory.retrieval.rrf_k``) keyed as the widget shows them
    beside each field."""
    mapped: dict[str, list[str]] = {}
    for error in errors:
        key = JOIN_SYMBOL.join(str(error.get("field") or "").split("."))
        mapped.setdefault(key, []).append(error["message"])
    return mapped


class ConfigWidget(JSONFormWidget):
    """The widget with its data textarea hidden by an attribute, not an inline style (the
    Content-Security-Policy forbids inline styles)."""

    template_name = "console/company/config_widget.html"


class CompanyConfigForm(forms.Form):
    config = forms.JSONField(label="Configuration", widget=ConfigWidget(schema=config_form_schema))
    expected_revision = forms.IntegerField(widget=forms.HiddenInput, min_value=0)

    def __init__(self, *args, errors_by_field: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # a fresh widget per form: the widget keeps its error map
        self.fields["config"].widget = ConfigWidget(schema=config_form_schema)
        if errors_by_field:
            self.fields["config"].widget.add_error(errors_by_field)

    def clean_config(self):
        value = self.cleaned_data["config"]
        if not isinstance(value, dict):
            raise forms.ValidationError("The configuration must be an object.")
        return value
