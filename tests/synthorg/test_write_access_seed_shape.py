"""``org_memory.write_access`` in the seeds' shape: per-category writer lists."""

import pytest

from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.company_config.org_memory import (
    SEED_GAP,
    SEED_NOT_A_LIST,
    SEED_POLICIES_HUMAN_ONLY,
    SEED_TWICE,
)

SEED = {
    "policies": ["human"],
    "adrs": ["human", "senior", "lead", "c_suite"],
    "procedures": ["human", "senior", "lead", "c_suite"],
}


def write_access(section):
    return parse_company_config({"org_memory": {"write_access": section}}).org_memory.write_access


def errors(section):
    with pytest.raises(CompanyConfigError) as caught:
        write_access(section)
    return [(e["field"], e["message"]) for e in caught.value.errors]


def test_the_seed_shape_becomes_rules_and_is_stored_as_rules():
    config = write_access(SEED)
    assert config.model_dump(mode="json") == {
        "rules": {
            "core_policy": {"allowed_seniority": None, "human_allowed": True},
            "adr": {"allowed_seniority": "senior", "human_allowed": True},
            "procedure": {"allowed_seniority": "senior", "human_allowed": True},
        }
    }
    # The stored form parses back to the same rules.
    assert write_access(config.model_dump(mode="json")) == config


def test_writer_lists_combine_with_rules_for_other_categories():
    config = write_access({"rules": {"convention": {"human_allowed": False}}, "adrs": ["c_suite"]})
    assert config.model_dump(mode="json")["rules"] == {
        "convention": {"allowed_seniority": None, "human_allowed": False},
        "adr": {"allowed_seniority": "c_suite", "human_allowed": False},
    }


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"adrs": "human"}, [("org_memory.write_access.adrs", SEED_NOT_A_LIST)]),
        (
            {"adrs": ["human", "senior", "c_suite"]},
            [
                (
                    "org_memory.write_access.adrs",
                    SEED_GAP.format(lowest="senior", missing="lead"),
                )
            ],
        ),
        (
            {"policies": ["human", "c_suite"]},
            [("org_memory.write_access.policies", SEED_POLICIES_HUMAN_ONLY)],
        ),
        (
            {"rules": {"adr": {}}, "adrs": ["human"]},
            [("org_memory.write_access.adrs", SEED_TWICE.format(category="adr", key="adrs"))],
        ),
        (
            {"policies": ["human"], "playbooks": ["human"]},
            [("org_memory.write_access.playbooks", "Extra inputs are not permitted")],
        ),
    ],
)
def test_writer_lists_without_an_exact_rule_are_refused_by_name(section, expected):
    assert errors(section) == expected


def test_unknown_writer_is_named():
    [(field, message)] = errors({"procedures": ["human", "intern"]})
    assert field == "org_memory.write_access.procedures"
    assert message.startswith("unknown writer 'intern'")
