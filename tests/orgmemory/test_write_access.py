"""The write rules, exhaustively: humans, every seniority around each threshold, no rule."""

import pytest

from orgmemory.domain import OrgFactAuthor
from orgmemory.write_access import (
    AUTONOMY_TOO_LOW,
    DEPARTMENT_NOT_ALLOWED,
    HUMAN_ONLY,
    NO_RULE,
    ROLE_NOT_ALLOWED,
    SENIORITY_TOO_LOW,
    OrgMemoryAccessDeniedError,
    check_write_access,
    explain_write_access,
    require_write_access,
)
from synthorg.company_config.org_memory import CategoryWriteRule, WriteAccessConfig
from synthorg.enums import OrgFactCategory, SeniorityLevel

DEFAULTS = WriteAccessConfig()
HUMAN = OrgFactAuthor(is_human=True)


def agent(seniority: SeniorityLevel) -> OrgFactAuthor:
    return OrgFactAuthor(agent_id="7", seniority=seniority, autonomy_level="semi")


@pytest.mark.parametrize(
    ("category", "allowed"),
    [
        ("core_policy", True),
        ("adr", True),
        ("procedure", True),
        ("convention", True),
        ("entity_definition", False),  # no default rule: nobody
    ],
)
def test_humans_under_default_rules(category, allowed):
    assert check_write_access(DEFAULTS, OrgFactCategory(category), HUMAN) is allowed


@pytest.mark.parametrize("seniority", list(SeniorityLevel))
def test_core_policy_is_human_only_for_every_seniority(seniority):
    decision = explain_write_access(DEFAULTS, OrgFactCategory.CORE_POLICY, agent(seniority))
    assert decision.allowed is False
    assert decision.reason == HUMAN_ONLY.format(category="core_policy")
    assert decision.can_request is False  # an approved request would make the agent its author


@pytest.mark.parametrize("category", ["adr", "procedure", "convention"])
@pytest.mark.parametrize(
    ("seniority", "allowed"),
    [
        ("junior", False),
        ("mid", False),  # just below the threshold
        ("senior", True),  # at the threshold
        ("lead", True),  # just above
        ("principal", True),
        ("director", True),
        ("vp", True),
        ("c_suite", True),
    ],
)
def test_senior_and_above_write_extended_categories(category, seniority, allowed):
    author = agent(SeniorityLevel(seniority))
    assert check_write_access(DEFAULTS, OrgFactCategory(category), author) is allowed


def test_reason_names_required_and_actual_seniority():
    decision = explain_write_access(DEFAULTS, OrgFactCategory.ADR, agent(SeniorityLevel.MID))
    assert decision.reason == SENIORITY_TOO_LOW.format(
        category="adr", required="senior", actual="mid"
    )
    assert decision.problem_extra(author_is_human=False) == {
        "category": "adr",
        "rule": {"allowed_seniority": "senior", "human_allowed": True},
        "reason": decision.reason,
        "can_request": True,
    }


@pytest.mark.parametrize("author", [HUMAN, agent(SeniorityLevel.C_SUITE)])
def test_missing_rule_denies_everyone_and_cannot_be_requested(author):
    decision = explain_write_access(DEFAULTS, OrgFactCategory.ENTITY_DEFINITION, author)
    assert decision.allowed is False
    assert decision.rule is None
    assert decision.reason == NO_RULE.format(category="entity_definition")
    assert decision.can_request is False


def test_rules_come_from_the_config():
    config = WriteAccessConfig(
        rules={
            OrgFactCategory.ENTITY_DEFINITION: CategoryWriteRule(
                allowed_seniority=SeniorityLevel.LEAD, human_allowed=False
            )
        }
    )
    entity = OrgFactCategory.ENTITY_DEFINITION
    assert check_write_access(config, entity, agent(SeniorityLevel.LEAD)) is True
    assert check_write_access(config, entity, agent(SeniorityLevel.SENIOR)) is False
    assert check_write_access(config, entity, HUMAN) is False
    assert explain_write_access(config, entity, HUMAN).can_request is False
    # Only the configured categories have rules: adr is now unwritable.
    assert check_write_access(config, OrgFactCategory.ADR, HUMAN) is False


def test_require_write_access_raises_with_the_rule():
    with pytest.raises(OrgMemoryAccessDeniedError) as caught:
        require_write_access(DEFAULTS, OrgFactCategory.ADR, agent(SeniorityLevel.JUNIOR))
    assert caught.value.status == 403
    assert caught.value.code == "org_write_denied"
    assert caught.value.extra["rule"] == {"allowed_seniority": "senior", "human_allowed": True}
    assert require_write_access(DEFAULTS, OrgFactCategory.ADR, HUMAN).allowed is True


def test_author_consistency():
    with pytest.raises(ValueError):
        OrgFactAuthor(is_human=True, agent_id="1")
    with pytest.raises(ValueError):
        OrgFactAuthor(agent_id="1")


# --- issue 33: role, department and autonomy --------------------------------------------------


def staff(*, role="", department="", autonomy="semi", seniority=SeniorityLevel.SENIOR):
    return OrgFactAuthor(
        agent_id="7",
        seniority=seniority,
        autonomy_level=autonomy,
        role=role,
        department=department,
    )


def narrowed(**dimensions) -> WriteAccessConfig:
    return WriteAccessConfig(
        rules={
            OrgFactCategory.ADR: CategoryWriteRule(
                allowed_seniority=SeniorityLevel.SENIOR, **dimensions
            )
        }
    )


ADR = OrgFactCategory.ADR


def test_allowed_roles_admit_only_those_roles_case_and_spacing_aside():
    config = narrowed(allowed_roles=["Release Manager", "architect"])
    assert check_write_access(config, ADR, staff(role="release  manager")) is True
    assert check_write_access(config, ADR, staff(role="Architect")) is True
    decision = explain_write_access(config, ADR, staff(role="Backend engineer"))
    assert decision.allowed is False
    assert decision.reason == ROLE_NOT_ALLOWED.format(
        category="adr", allowed=["Release Manager", "architect"], actual="Backend engineer"
    )
    assert decision.problem_extra(author_is_human=False)["rule"] == {
        "allowed_seniority": "senior",
        "human_allowed": True,
        "allowed_roles": ["Release Manager", "architect"],
    }
    assert decision.can_request is True  # a human may still approve it
    # seniority still applies first; humans are not agents
    assert check_write_access(config, ADR, staff(role="architect", seniority="mid")) is False
    assert check_write_access(config, ADR, HUMAN) is True


def test_allowed_departments_admit_only_those_departments():
    config = narrowed(allowed_departments=["Platform"])
    assert check_write_access(config, ADR, staff(department="platform")) is True
    decision = explain_write_access(config, ADR, staff(department="Sales"))
    assert decision.allowed is False
    assert decision.reason == DEPARTMENT_NOT_ALLOWED.format(
        category="adr", allowed=["Platform"], actual="Sales"
    )
    assert check_write_access(config, ADR, staff(department="")) is False


@pytest.mark.parametrize(
    ("autonomy", "allowed"),
    [("locked", False), ("supervised", False), ("semi", True), ("full", True)],
)
def test_min_autonomy_admits_that_autonomy_and_above(autonomy, allowed):
    config = narrowed(min_autonomy="semi")
    decision = explain_write_access(config, ADR, staff(autonomy=autonomy))
    assert decision.allowed is allowed
    if not allowed:
        assert decision.reason == AUTONOMY_TOO_LOW.format(
            category="adr", required="semi", actual=autonomy
        )


def test_the_dimensions_combine_and_unset_ones_do_not_narrow():
    config = narrowed(allowed_roles=["architect"], allowed_departments=["platform"])
    assert check_write_access(config, ADR, staff(role="architect", department="platform"))
    assert not check_write_access(config, ADR, staff(role="architect", department="sales"))
    assert not check_write_access(config, ADR, staff(role="analyst", department="platform"))
    # the default rules set none of them: any role, department and autonomy
    assert check_write_access(DEFAULTS, ADR, staff(role="anything", autonomy="locked"))


@pytest.mark.parametrize(
    "dimension",
    [
        {"allowed_roles": ["architect"]},
        {"allowed_departments": ["platform"]},
        {"min_autonomy": "full"},
    ],
)
def test_a_dimension_without_agent_writers_is_refused_at_load(dimension):
    from synthorg.company_config import CompanyConfigError, parse_company_config

    name = next(iter(dimension))
    for category in ("core_policy", "convention"):
        rule = {"allowed_seniority": None, "human_allowed": True, **dimension}
        with pytest.raises(CompanyConfigError) as caught:
            parse_company_config({"org_memory": {"write_access": {"rules": {category: rule}}}})
        assert name in str(caught.value) and "allowed_seniority is null" in str(caught.value)


def test_a_human_author_has_no_role_or_department():
    with pytest.raises(ValueError):
        OrgFactAuthor(is_human=True, role="architect")
    with pytest.raises(ValueError):
        OrgFactAuthor(is_human=True, department="platform")
