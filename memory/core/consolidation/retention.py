"""Retention resolution: how many days a category of an agent's memories is kept.

Resolution order per category (first that is set wins), as the seed specifies:

1. the agent's per-category rule (``Agent.retention_overrides.rules``)
2. the company's per-category rule (``memory.consolidation.retention.rules``)
3. the agent's default (``Agent.retention_overrides.default_retention_days``)
4. the company's default (``memory.consolidation.retention.default_retention_days``)
5. keep forever (``None``)

The action (``archive``, the default, or ``delete``) comes with the days: from the rule that
set them, or the ``default_action`` next to the default that did.

The agent's core memory (tag ``core``) is resolved as a category of its own, ``core``, from
the rules alone (1, then 2): no default reaches it, and the ``semantic`` rule does not either,
so only an operator's rule that names ``core`` ages core memory out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from synthorg.company_config.memory import (
    AgentRetentionOverrides,
    RetentionAction,
    RetentionCategory,
    RetentionConfig,
)


class RetentionSource(StrEnum):
    AGENT_CATEGORY = "agent_category"
    COMPANY_CATEGORY = "company_category"
    AGENT_DEFAULT = "agent_default"
    COMPANY_DEFAULT = "company_default"
    FOREVER = "forever"


@dataclass(frozen=True)
class RetentionDecision:
    category: RetentionCategory
    days: int | None  # None: kept forever
    source: RetentionSource
    action: RetentionAction = RetentionAction.ARCHIVE


def resolve_retention(
    category: RetentionCategory,
    *,
    company: RetentionConfig,
    agent: AgentRetentionOverrides | None = None,
) -> RetentionDecision:
    agent = agent or AgentRetentionOverrides()
    agent_rule, company_rule = agent.rule_for(category), company.rule_for(category)
    chain: list[tuple[int | None, RetentionAction, RetentionSource]] = [
        (rule.retention_days, rule.action, source)
        for rule, source in (
            (agent_rule, RetentionSource.AGENT_CATEGORY),
            (company_rule, RetentionSource.COMPANY_CATEGORY),
        )
        if rule is not None
    ]
    if category is not RetentionCategory.CORE:  # core memory: only a rule that names it
        chain += [
            (agent.default_retention_days, agent.default_action, RetentionSource.AGENT_DEFAULT),
            (
                company.default_retention_days,
                company.default_action,
                RetentionSource.COMPANY_DEFAULT,
            ),
        ]
    for days, action, source in chain:
        if days is not None:
            return RetentionDecision(category, days, source, action)
    return RetentionDecision(category, None, RetentionSource.FOREVER)


def resolve_all(
    *,
    company: RetentionConfig,
    agent: AgentRetentionOverrides | None = None,
    categories: Iterable[RetentionCategory] = tuple(RetentionCategory),
) -> dict[RetentionCategory, RetentionDecision]:
    return {c: resolve_retention(c, company=company, agent=agent) for c in categories}
