"""The write rules, exhaustively: humans, every seniority around each threshold, no rule."""

import pytest

from orgmemory.domain import OrgFactAuthor
from orgmemory.write_access import (
    HUMAN_ONLY,
    NO_RULE,
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
