"""The retention resolution chain, case by case."""

import pytest

from memory.core.consolidation.retention import (
    RetentionDecision,
    RetentionSource,
    resolve_all,
    resolve_retention,
)
from synthorg.company_config.memory import (
    AgentRetentionOverrides,
    RetentionCategory,
    RetentionConfig,
    RetentionRule,
)
from synthorg.enums import MemoryCategory

EPISODIC, SEMANTIC, WORKING = (
    MemoryCategory.EPISODIC,
    MemoryCategory.SEMANTIC,
    MemoryCategory.WORKING,
)
COMPANY = RetentionConfig(
    rules=(RetentionRule(category=EPISODIC, retention_days=30),), default_retention_days=365
)
AGENT = AgentRetentionOverrides(
    rules=(RetentionRule(category=WORKING, retention_days=2),), default_retention_days=90
)


@pytest.mark.parametrize(
    ("company", "agent", "category", "expected"),
    [
        # 1. agent per-category wins over everything
        (COMPANY, AGENT, WORKING, (2, RetentionSource.AGENT_CATEGORY)),
        (
            COMPANY,
            AgentRetentionOverrides(rules=(RetentionRule(category=EPISODIC, retention_days=7),)),
            EPISODIC,
            (7, RetentionSource.AGENT_CATEGORY),
        ),
        # 2. company per-category beats the agent's default
        (COMPANY, AGENT, EPISODIC, (30, RetentionSource.COMPANY_CATEGORY)),
        # 3. agent default beats the company default
        (COMPANY, AGENT, SEMANTIC, (90, RetentionSource.AGENT_DEFAULT)),
        # 4. company default when the agent has nothing
        (COMPANY, None, SEMANTIC, (365, RetentionSource.COMPANY_DEFAULT)),
        (COMPANY, AgentRetentionOverrides(), SEMANTIC, (365, RetentionSource.COMPANY_DEFAULT)),
        # 5. keep forever
        (RetentionConfig(), None, SEMANTIC, (None, RetentionSource.FOREVER)),
        (
            RetentionConfig(),
            AgentRetentionOverrides(rules=(RetentionRule(category=WORKING, retention_days=1),)),
            SEMANTIC,
            (None, RetentionSource.FOREVER),
        ),
    ],
)
def test_resolution_chain(company, agent, category, expected):
    assert resolve_retention(category, company=company, agent=agent) == RetentionDecision(
        category, *expected
    )


def test_resolve_all_covers_every_category():
    decisions = resolve_all(company=COMPANY, agent=AGENT)
    assert {c: d.days for c, d in decisions.items()} == {
        MemoryCategory.WORKING: 2,
        MemoryCategory.EPISODIC: 30,
        MemoryCategory.SEMANTIC: 90,
        MemoryCategory.PROCEDURAL: 90,
        MemoryCategory.SOCIAL: 90,
        RetentionCategory.CORE: None,  # no default reaches the core memory
    }


def test_the_core_memory_is_resolved_from_a_rule_that_names_it_only():
    core = RetentionCategory.CORE
    assert resolve_retention(core, company=COMPANY, agent=AGENT) == RetentionDecision(
        core, None, RetentionSource.FOREVER
    )
    named = RetentionConfig(rules=(RetentionRule(category=core, retention_days=60),))
    assert resolve_retention(core, company=named, agent=AGENT) == RetentionDecision(
        core, 60, RetentionSource.COMPANY_CATEGORY
    )
    mine = AgentRetentionOverrides(rules=(RetentionRule(category=core, retention_days=5),))
    assert resolve_retention(core, company=named, agent=mine) == RetentionDecision(
        core, 5, RetentionSource.AGENT_CATEGORY
    )
