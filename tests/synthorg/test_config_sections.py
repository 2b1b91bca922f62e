"""The company-config section registry (synthorg.company_config.sections, issue 34).

Capabilities declare their sections next to their code and register them at start-up; the
root model must come out as it was when every section was declared in the kernel: the same
JSON schema (field order included), the same defaults and the same error payloads as the
frozen snapshot taken before the move (tests/synthorg/data/company_config_snapshot.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from synthorg.company_config import CompanyConfig, CompanyConfigError, parse_company_config
from synthorg.company_config.memory import CompanyMemoryConfig, ConsolidationConfig
from synthorg.company_config.sections import (
    ConfigSection,
    ConfigSectionError,
    register_config_sections,
    registered_sections,
)

SNAPSHOT = Path(__file__).parent / "data" / "company_config_snapshot.json"

#: every registered section and the package that declares it
EXPECTED = {
    "memory.procedural": "memory.procedural.config",
    "memory.consolidation.experience_compressor": "memory.procedural.config",
    "memory.consolidation.wiki_export": "memory.procedural.config",
    "memory.procedural.evolver": "memory.procedural.evolver.config",
    "memory.extraction": "memory.ingestion.config",
    "memory.conversation": "memory.ingestion.config",
    "memory.dream": "memory.ingestion.config",
    "memory.fine_tune": "memory.finetune.config",
}


def _snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


def _errors(config: dict) -> list[dict] | None:
    try:
        parse_company_config(config)
    except CompanyConfigError as exc:
        return exc.errors
    return None


def test_regenerate_snapshot_only_when_asked():
    """``SYNTHORG_UPDATE_CONFIG_SNAPSHOT=1`` rewrites the snapshot (after a deliberate
    schema change); otherwise this test does nothing."""
    if os.environ.get("SYNTHORG_UPDATE_CONFIG_SNAPSHOT") != "1":
        return
    snapshot = _snapshot()
    snapshot["schema"] = CompanyConfig.model_json_schema()
    snapshot["defaults"] = parse_company_config({}).model_dump(mode="json")
    for case in snapshot["errors"]:
        case["errors"] = _errors(case["config"])
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1) + "\n")


def test_every_section_is_registered_exactly_once_by_its_capability():
    sections = registered_sections()
    paths = [section.path for section in sections]
    assert sorted(paths) == sorted(EXPECTED)
    assert len(paths) == len(set(paths))
    for section in sections:
        assert section.model.__module__ == EXPECTED[section.path]


def test_each_section_is_a_field_of_its_host_with_its_model_as_default():
    models: dict[str, type[BaseModel]] = {
        "": CompanyConfig,
        "memory": CompanyMemoryConfig,
        "memory.consolidation": ConsolidationConfig,
    }
    for section in registered_sections():
        host = models[section.parent]
        field = host.model_fields[section.name]
        assert field.annotation is section.model
        assert field.get_default(call_default_factory=True) == section.model()
        models[section.path] = section.model


def test_the_sections_sit_where_the_kernel_declared_them_before():
    assert list(CompanyMemoryConfig.model_fields) == [
        "backend",
        "level",
        "storage",
        "options",
        "retrieval",
        "self_editing",
        "consolidation",
        "embedder",
        "chunking",
        "procedural",
        "redaction",
        "fine_tune",
        "extraction",
        "conversation",
        "dream",
        "request_log",
        "namespace_templates",
    ]
    procedural = CompanyMemoryConfig.model_fields["procedural"].annotation
    assert list(procedural.model_fields)[-1] == "evolver"
    assert list(ConsolidationConfig.model_fields)[-3:] == [
        "llm",
        "experience_compressor",
        "wiki_export",
    ]


def test_the_json_schema_is_the_snapshot_field_order_included():
    # json.dumps keeps key order: a moved property or definition fails here
    live = json.dumps(CompanyConfig.model_json_schema(), indent=1)
    assert live == json.dumps(_snapshot()["schema"], indent=1)


def test_the_default_dump_is_the_snapshot():
    live = json.dumps(parse_company_config({}).model_dump(mode="json"), indent=1)
    assert live == json.dumps(_snapshot()["defaults"], indent=1)


@pytest.mark.parametrize("case", _snapshot()["errors"], ids=lambda case: json.dumps(case["config"]))
def test_error_payloads_are_the_snapshot(case):
    assert _errors(case["config"]) == case["errors"]


def test_the_cross_section_check_sees_the_mirrored_interval():
    # options.consolidation_interval is mirrored into consolidation.interval before the
    # evolver's registered check runs on the memory section
    errors = _errors(
        {
            "memory": {
                "options": {"consolidation_interval": "never"},
                "procedural": {"evolver": {"enabled": True}},
            }
        }
    )
    assert errors is not None
    assert [e["field"] for e in errors] == ["memory.procedural.evolver.enabled"]
    assert errors[0]["code"] == "config_value_not_offered"


def test_an_unknown_section_in_a_config_is_refused():
    assert _errors({"memory": {"evolver": {"enabled": True}}}) == [
        {
            "field": "memory.evolver",
            "message": "Extra inputs are not permitted",
            "code": "extra_forbidden",
        }
    ]


class _Probe(BaseModel):
    x: int = 1


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (ConfigSection("memory.procedural", _Probe), "memory.procedural: registered twice"),
        (ConfigSection("memory.retrieval", _Probe), "already has that field"),
        (ConfigSection("memory.nowhere.probe", _Probe), "'nowhere' is not a model field"),
        (ConfigSection("memory.backend.probe", _Probe), "'backend' is not a model field"),
        (ConfigSection("memory.probe", _Probe, after="nowhere"), "no field 'nowhere'"),
        (
            ConfigSection("memory.probe", _Probe, after="level", before="storage"),
            "give after or before, not both",
        ),
    ],
)
def test_the_registry_refuses_a_bad_registration_and_changes_nothing(section, message):
    before = json.dumps(CompanyConfig.model_json_schema())
    with pytest.raises(ConfigSectionError, match=message):
        register_config_sections(section)
    assert json.dumps(CompanyConfig.model_json_schema()) == before
    assert [s.path for s in registered_sections()].count(section.path) <= 1
