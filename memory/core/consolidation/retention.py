"""Retention resolution: how many days a category of an agent's memories is kept.

Resolution order per category (first that is set wins), as the seed specifies:

1. the agent's per-category rule (``Agent.retention_overrides.rules``)
2. the company's per-category rule (``memory.consolidation.retention.rules``)
3. the agent's default (``Agent.retention_overrides.default_retention_days``)
4. the company's default (``memory.consolidation.retention.default_retention_days``)
5. keep forever (``None``)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from synthorg.company_config.memory import AgentRetentionOverrides, RetentionConfig
from synthorg.enums import MemoryCategory


class RetentionSource(StrEnum):
    AGENT_CATEGORY = "agent_category"
    COMPANY_CATEGORY = "company_category"
    AGENT_DEFAULT = "agent_default"
    COMPANY_DEFAULT = "company_default"
    FOREVER = "forever"


@dataclass(frozen=True)
class RetentionDecision:
    category: MemoryCategory
    days: int | None  # None: kept forever
    source: RetentionSource


def resolve_retention(
    category: MemoryCategory,
    *,
    company: RetentionConfig,
    agent: AgentRetentionOverrides | None = None,
) -> RetentionDecision:
    agent = agent or AgentRetentionOverrides()
    chain = (
        (agent.days_for(category), RetentionSource.AGENT_CATEGORY),
        (company.days_for(category), RetentionSource.COMPANY_CATEGORY),
        (agent.default_retention_days, RetentionSource.AGENT_DEFAULT),
        (company.default_retention_days, RetentionSource.COMPANY_DEFAULT),
    )
    for days, source in chain:
        if days is not None:
            return RetentionDecision(category, days, source)
    return RetentionDecision(category, None, RetentionSource.FOREVER)


def resolve_all(
    *,
    company: RetentionConfig,
    agent: AgentRetentionOverrides | None = None,
    categories: Iterable[MemoryCategory] = tuple(MemoryCategory),
) -> dict[MemoryCategory, RetentionDecision]:
    return {c: resolve_retention(c, company=company, agent=agent) for c in categories}
