"""Every leaf field of the company config acts or is refused (issue 26: "no knob is
accepted and then ignored").

The fields are enumerated by walking the pydantic models (a list's or mapping's item model
included); each must have evidence in tests/support/config_evidence.py, and each piece of
evidence must name a test that exists (imported, not run: the tests run in their own
modules).
"""

from __future__ import annotations

import importlib
import typing

from pydantic import BaseModel

from synthorg.company_config import CompanyConfig
from tests.support.config_evidence import EVIDENCE, Acts, Descriptive, Refused


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
