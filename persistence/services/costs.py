"""Writes for the cost ledger. Records are append-only: a correction is a new record."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.db import transaction
from django.utils import timezone

from persistence.access import owner_for_create
from persistence.models import Agent, Company, CostRecord, Task
from persistence.principal import Principal
from persistence.services._scope import require_same_company
from synthorg.currencies import is_iso_4217
from synthorg.errors import InvalidInputError

INVALID_COST = "cost must be a finite decimal number."
INVALID_CURRENCY = "currency must be a three-letter ISO 4217 code such as 'USD'."
UNKNOWN_CURRENCY = "currency {code!r} is not an ISO 4217 currency code."
NEGATIVE_TOKENS = "Token counts cannot be negative."
TOO_MANY_TOKENS = "Token counts above {limit:,} for one record are not plausible."
NEGATIVE_COST = (
    "cost cannot be negative: an agent reports what a call cost. A correction is recorded "
    "by a company admin."
)
# One metered call: far beyond any model's context window, far below the column's range.
MAX_TOKENS_PER_RECORD = 100_000_000


def normalise_currency(currency: str) -> str:
    code = (currency or "").strip().upper()
    if len(code) != 3 or not code.isalpha() or not code.isascii():
        raise InvalidInputError(INVALID_CURRENCY, code="invalid_currency")
    if not is_iso_4217(code):
        raise InvalidInputError(UNKNOWN_CURRENCY.format(code=code), code="invalid_currency")
    return code


@transaction.atomic
def cost_record_create(
    *,
    company: Company,
    agent: Agent | None = None,
    task: Task | None = None,
    provider: str,
    model: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost: Decimal | str | int,
    currency: str = "USD",
    occurred_at: datetime | None = None,
) -> CostRecord:
    """Append one metered LLM call to the ledger (what the LLM client calls after each call).

    ``cost`` is converted with :class:`~decimal.Decimal` (pass a ``Decimal`` or a string, not a
    float, to keep it exact). A negative cost is a correction of an earlier record.
    """
    require_same_company(company, agent=agent, task=task)
    try:
        amount = cost if isinstance(cost, Decimal) else Decimal(str(cost))
    except (InvalidOperation, ValueError) as exc:
        raise InvalidInputError(INVALID_COST, code="invalid_cost") from exc
    if not amount.is_finite():
        raise InvalidInputError(INVALID_COST, code="invalid_cost")
    if input_tokens < 0 or output_tokens < 0:
        raise InvalidInputError(NEGATIVE_TOKENS, code="invalid_tokens")
    if input_tokens > MAX_TOKENS_PER_RECORD or output_tokens > MAX_TOKENS_PER_RECORD:
        raise InvalidInputError(
            TOO_MANY_TOKENS.format(limit=MAX_TOKENS_PER_RECORD), code="invalid_tokens"
        )
    now = timezone.now()
    record = CostRecord(
        company=company,
        agent=agent,
        task=task,
        provider=provider,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=amount,
        currency=normalise_currency(currency),
        occurred_at=occurred_at or now,
        created_at=now,
    )
    record.full_clean()
    record.save()
    return record


@transaction.atomic
def cost_record_submit(*, principal: Principal, agent: Agent | None = None, **fields) -> CostRecord:
    """A cost reported through the API: an agent records only its own costs, and never a
    negative one (only a company admin records a correction)."""
    agent = owner_for_create(principal, "cost_record", agent)
    if principal.is_agent and _is_negative(fields.get("cost")):
        raise InvalidInputError(NEGATIVE_COST, code="negative_cost")
    return cost_record_create(company=principal.company, agent=agent, **fields)


def _is_negative(cost) -> bool:
    try:
        return Decimal(str(cost)) < 0
    except (InvalidOperation, ValueError):
        return False  # cost_record_create reports the malformed amount
