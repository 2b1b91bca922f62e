"""Core policies: core_policy facts (and a config list stored before they were versioned).

A human's config save turns ``org_memory.core_policies`` into versioned facts
(``orgmemory.services.policies``); a list stored without a human (``load_company_config``
without ``--user``, an older config) stays in the config, unversioned, ahead of the facts
until a human adopts it. ``as_of`` applies to the facts; their order is the current one.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime

from orgmemory.models import OrgFact, PolicyDelivery
from orgmemory.selectors.facts import live_facts
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
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


def policies(
    *, company: Company, as_of: datetime | None = None, config: CompanyConfig | None = None
) -> list[PolicyView]:
    """Core policies in their intrinsic order: unversioned config policies first (in config
    order), then core_policy facts live at ``as_of`` by ``position`` (then oldest first).
    Never filtered by relevance. ``config``: the company's, when the caller has read it."""
    config = config or company_config(company)
    config_items = [
        PolicyView(id=f"config-{index}", source="config", content=text)
        for index, text in enumerate(config.org_memory.core_policies)
    ]
    live = live_facts(company=company, categories={OrgFactCategory.CORE_POLICY}, as_of=as_of)
    positions = dict(
        OrgFact.objects.filter(
            company=company, fact_id__in=[view.fact_id for view in live]
        ).values_list("fact_id", "position")
    )
    live.sort(
        key=lambda view: (
            positions.get(view.fact_id) is None,
            positions.get(view.fact_id) or 0,
            view.created_at,
            str(view.fact_id),
        )
    )
    fact_items = [
        PolicyView(
            id=str(view.fact_id),
            source="fact",
            content=view.content,
            fact_id=view.fact_id,
            version=view.version,
            created_at=view.created_at,
        )
        for view in live
    ]
    return config_items + fact_items


CORE_POLICIES_HEADER = "## Company policies (always apply)"


def format_core_policy_block(texts: list[str]) -> str | None:
    """The system message every agent's context pins, or ``None`` without core policies.

    The one formatter of the block: ``/memories/context`` (every injection strategy) and the
    Core policies page show the same text.
    """
    if not texts:
        return None
    return CORE_POLICIES_HEADER + "\n" + "\n".join(f"- {text}" for text in texts)


@dataclass(frozen=True)
class CorePolicyBlock:
    """The pinned block as one agent receives it, and which revision of the set it is.

    ``revision`` is the SHA-256 of ``text``: two deliveries carry the same revision exactly
    when the agents received the same words. ``versions`` names each policy behind it
    (``"<fact_id>:v<version>"``, or ``"config-<index>"`` for an unversioned config policy)."""

    text: str
    revision: str
    versions: tuple[str, ...]


def block_revision(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def core_policy_block_of(items: list[PolicyView]) -> CorePolicyBlock | None:
    """The block of ``items`` (from :func:`policies`), or ``None`` without policies."""
    text = format_core_policy_block([item.content for item in items])
    if text is None:
        return None
    versions = tuple(
        f"{item.fact_id}:v{item.version}" if item.source == "fact" else item.id for item in items
    )
    return CorePolicyBlock(text=text, revision=block_revision(text), versions=versions)


def pinned_core_policies(
    *, company: Company, config: CompanyConfig | None = None
) -> CorePolicyBlock | None:
    """The block every agent of ``company`` receives now, with its revision."""
    return core_policy_block_of(policies(company=company, config=config))


def core_policy_block(*, company: Company) -> str | None:
    block = pinned_core_policies(company=company)
    return block.text if block else None


@dataclass(frozen=True)
class DeliveryView:
    """An agent's last core-policy delivery, compared with the block agents receive now."""

    agent_id: int
    agent_name: str
    delivered_at: datetime
    revision: str
    versions: tuple[str, ...]
    current: bool


def policy_deliveries(*, company: Company, current: CorePolicyBlock | None) -> list[DeliveryView]:
    """Every agent of ``company`` that received a core policy block, latest first;
    ``current`` says whether its block is ``current`` (the block agents receive now)."""
    rows = (
        PolicyDelivery.objects.filter(company=company)
        .select_related("agent")
        .order_by("-delivered_at", "agent_id")
    )
    return [
        DeliveryView(
            agent_id=row.agent_id,
            agent_name=row.agent.name,
            delivered_at=row.delivered_at,
            revision=row.revision,
            versions=tuple(row.versions),
            current=current is not None and row.revision == current.revision,
        )
        for row in rows
    ]
