"""Every leaf field of the company config acts or is refused (issue 26: "no knob is
accepted and then ignored").

The fields are enumerated by walking the pydantic models (a list's or mapping's item model
included); each must have evidence in tests/support/config_evidence.py, and each piece of
evidence must name a test that exists (imported, not run: the tests run in their own
modules).
"""

from __future__ import annotations

import enum
import importlib
import typing

import pytest
from pydantic import BaseModel

from synthorg.company_config import CompanyConfig, CompanyConfigError, parse_company_config
from synthorg.company_config.fields import NEEDS_SETTING_CODE, NOT_OFFERED_CODE
from tests.support.config_evidence import (
    ENABLING,
    EVIDENCE,
    ITEM_FIELDS,
    PROBE_VALUES,
    Acts,
    Descriptive,
    Refused,
)


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def leaf_fields(model: type[BaseModel] = CompanyConfig, prefix: str = "") -> list[str]:
    """Dotted paths of every leaf field under ``model``; a field whose type holds a model
    (directly, optional, or as a tuple's / mapping's items) is walked into instead."""
    leaves: list[str] = []
    for name, field in model.model_fields.items():
        models = _models_in(field.annotation)
        if models:
            for nested in models:
                leaves.extend(leaf_fields(nested, f"{prefix}{name}."))
        else:
            leaves.append(prefix + name)
    return leaves


def _test_exists(node_id: str) -> bool:
    path, _, qualname = node_id.partition("::")
    if not (path.startswith("tests/") and path.endswith(".py") and qualname):
        return False
    try:
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    except ImportError:
        return False
    target: object = module
    for part in qualname.split("::"):
        target = getattr(target, part.split("[", 1)[0], None)
        if target is None:
            return False
    return callable(target) and qualname.rsplit("::", 1)[-1].startswith("test")


def test_the_walk_finds_every_section_and_item_model():
    fields = leaf_fields()
    assert len(fields) == len(set(fields))
    assert "memory.retrieval.rrf_k" in fields
    assert "memory.consolidation.retention.rules.action" in fields  # a tuple's item model
    assert "org_memory.write_access.rules.human_allowed" in fields  # a mapping's item model
    assert "memory.embedder.dims" in fields  # an optional model


def test_every_config_field_has_evidence_that_exists():
    missing = [field for field in leaf_fields() if field not in EVIDENCE]
    broken = [
        f"{field}: {node_id}"
        for field, evidence in EVIDENCE.items()
        for node_id in evidence.node_ids
        if not _test_exists(node_id)
    ]
    assert missing == [], f"{len(missing)} config fields have no evidence: {missing}"
    assert broken == [], f"{len(broken)} evidence node ids name no test: {broken}"


def test_the_evidence_names_only_fields_that_exist():
    assert sorted(set(EVIDENCE) - set(leaf_fields())) == []


def test_each_piece_of_evidence_is_well_formed():
    for field, evidence in EVIDENCE.items():
        assert isinstance(evidence, Acts | Refused | Descriptive), field
        assert evidence.node_ids, field
        if isinstance(evidence, Descriptive):
            assert evidence.reason.strip(), field


# --- every field under the default config, and under the setting it needs -------------------


def _field_info(path: str):
    model: type[BaseModel] = CompanyConfig
    parts = path.split(".")
    for part in parts[:-1]:
        model = _models_in(model.model_fields[part].annotation)[0]
    return model.model_fields[parts[-1]]


def _probe_value(path: str) -> object:
    """A value other than the field's default that its type and bounds accept."""
    if path in PROBE_VALUES:
        return PROBE_VALUES[path]
    field = _field_info(path)
    default = field.get_default(call_default_factory=True)
    options = [
        value
        for arg in (field.annotation, *typing.get_args(field.annotation))
        for value in (
            typing.get_args(arg)
            if typing.get_origin(arg) is typing.Literal
            else [member.value for member in arg]
            if isinstance(arg, type) and issubclass(arg, enum.Enum)
            else []
        )
        if value != default
    ]
    if options:
        return options[0]
    if isinstance(default, bool):
        return not default
    bounds = {type(m).__name__: m for m in field.metadata}
    if isinstance(default, int):
        upper = getattr(bounds.get("Le"), "le", None)
        return default - 1 if upper is not None and default >= upper else default + 1
    if isinstance(default, float):
        return round(default / 2, 4) if default else 0.25
    if isinstance(default, str):
        return default + "-2"
    if default is None:
        return 7 if int in typing.get_args(field.annotation) else "probe"
    if isinstance(default, tuple):
        return []
    raise AssertionError(f"{path}: add a PROBE_VALUES entry")


def _nest(path: str, value: object) -> dict:
    for part in reversed(path.split(".")):
        value = {part: value}
    return typing.cast(dict, value)


def _merge(base: dict, extra: dict) -> dict:
    merged = dict(base)
    for key, value in extra.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both else value
    return merged


def _enabling(path: str) -> dict | None:
    prefixes = [p for p in ENABLING if path == p or (p.endswith(".") and path.startswith(p))]
    return ENABLING[max(prefixes, key=len)] if prefixes else None


def _flatten(config: dict, prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def _outcome(config: dict) -> str:
    try:
        parse_company_config(config)
    except CompanyConfigError as exc:
        return exc.errors[0]["code"]
    return "accepted"


PRECISE_REFUSALS = {NEEDS_SETTING_CODE, NOT_OFFERED_CODE}
# the linear weights sum to 1: alone, one of them breaks the sum (a value error naming it)
COUPLED = {"memory.retrieval.relevance_weight", "memory.retrieval.recency_weight"}


@pytest.mark.parametrize(
    "path", [f for f in leaf_fields() if not any(f.startswith(p) for p in ITEM_FIELDS)]
)
def test_every_field_acts_under_the_default_config_or_is_refused_naming_what_it_needs(path):
    """Set alone on the default config, a value other than the default is either accepted —
    and the field's evidence proves an effect (``Acts``) — or refused with a precise code; a
    refused field that acts somewhere names the setting it acts under (``ENABLING``), under
    which the same value is accepted."""
    value = _probe_value(path)
    alone = _outcome(_nest(path, value))
    evidence = EVIDENCE[path]
    enabling = _enabling(path)
    if alone == "accepted":
        assert isinstance(evidence, Acts), f"{path} is accepted alone: its evidence must act"
        # a field that acts only under a setting (other than being that setting) is refused
        # without it: accepted alone, it would change nothing
        assert not enabling or _flatten(enabling).get(path) is not None, (
            f"{path} is accepted without {_flatten(enabling)}, which it needs"
        )
        return
    if isinstance(evidence, (Refused, Descriptive)):
        return
    assert alone in PRECISE_REFUSALS or path in COUPLED, f"{path}: refused as {alone!r}"
    assert enabling, f"{path} is refused alone ({alone}): name its setting"
    assert _outcome(_merge(enabling, _nest(path, value))) == "accepted", path


def test_the_enabling_settings_are_accepted_alone():
    """Each setting a field needs loads by itself: the probe's refusals come from the
    field, not from the setting."""
    assert {p: _outcome(s) for p, s in ENABLING.items() if _outcome(s) != "accepted"} == {}
