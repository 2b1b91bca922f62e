"""Core policies: the company config's ``org_memory.core_policies`` and core_policy facts.

Config core policies are not versioned (the company config has no history), so ``as_of``
applies to core-policy *facts* only; config policies are always the current ones.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from orgmemory.selectors.facts import live_facts
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.enums import OrgFactCategory


@dataclass(frozen=True)
class PolicyView:
    """A core policy: from the company config (``source="config"``) or a core_policy fact."""

    id: str
    source: str
    content: str
    fact_id: uuid.UUID | None = None
    version: int | None = None
    created_at: datetime | None = None


def policies(*, company: Company, as_of: datetime | None = None) -> list[PolicyView]:
    """Core policies in their intrinsic order: config policies first (in config order),
    then core_policy facts live at ``as_of`` (oldest first). Never filtered by relevance."""
    config_items = [
        PolicyView(id=f"config-{index}", source="config", content=text)
        for index, text in enumerate(company_config(company).org_memory.core_policies)
    ]
    fact_items = [
        PolicyView(
            id=str(view.fact_id),
            source="fact",
            content=view.content,
            fact_id=view.fact_id,
            version=view.version,
            created_at=view.created_at,
        )
        for view in live_facts(
            company=company, categories={OrgFactCategory.CORE_POLICY}, as_of=as_of
        )
    ]
    return config_items + fact_items
