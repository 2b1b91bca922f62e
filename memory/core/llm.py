"""The LLM that memory maintenance uses, with its token usage written to the cost ledger.

:func:`completion_provider_for` returns ``None`` when no LLM is configured, so callers
degrade (truncation / extractive summaries) instead of failing. Every completion is recorded
through ``persistence.services.costs.cost_record_create``; the kernel's client only knows a
``usage_recorder`` callback, so the dependency points the right way (memory → persistence).
"""

from __future__ import annotations

import logging
from decimal import Decimal

from django.conf import settings

from persistence.models import Agent, Company
from persistence.services.costs import cost_record_create
from synthorg.llm import (
    Completion,
    CompletionProvider,
    LLMNotConfiguredError,
    UsageRecorder,
    completion_provider_from_settings,
)

logger = logging.getLogger(__name__)

_PER_MILLION = Decimal(1_000_000)


def completion_cost(completion: Completion) -> Decimal:
    """Price of one completion from ``SYNTHORG_LLM["INPUT_COST_PER_MTOK"]`` /
    ``["OUTPUT_COST_PER_MTOK"]`` (USD per million tokens; 0 when not set)."""
    conf = getattr(settings, "SYNTHORG_LLM", None) or {}
    input_price = Decimal(str(conf.get("INPUT_COST_PER_MTOK") or 0))
    output_price = Decimal(str(conf.get("OUTPUT_COST_PER_MTOK") or 0))
    usage = completion.usage
    return (usage.input_tokens * input_price + usage.output_tokens * output_price) / _PER_MILLION


def cost_usage_recorder(*, company: Company, agent: Agent | None = None) -> UsageRecorder:
    """A recorder writing one cost record per completion, attributed to ``company``/``agent``."""

    def record(completion: Completion) -> None:
        cost_record_create(
            company=company,
            agent=agent,
            provider=completion.provider,
            model=completion.model,
            input_tokens=completion.usage.input_tokens,
            output_tokens=completion.usage.output_tokens,
            cost=completion_cost(completion),
            currency="USD",
        )

    return record


def completion_provider_for(
    *, company: Company, agent: Agent | None = None
) -> CompletionProvider | None:
    """The configured LLM client recording costs for ``company``, or ``None``."""
    try:
        return completion_provider_from_settings(
            usage_recorder=cost_usage_recorder(company=company, agent=agent)
        )
    except LLMNotConfiguredError:
        return None
