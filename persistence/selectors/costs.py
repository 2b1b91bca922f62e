"""Reads over the cost ledger: filtered listings, exact per-currency sums, grouped summaries
and the monthly budget check. Money is summed by Postgres ``numeric`` and handled as
:class:`~decimal.Decimal`; amounts in different currencies are never added together."""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import Count, F, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from persistence.budget import BUDGET_KEY, BUDGET_NAMESPACE, MonthlyBudget
from persistence.models import Agent, Company, CostRecord, Task
from persistence.selectors.filtering import where_given
from persistence.selectors.operations import setting_get
from synthorg.errors import InvalidInputError

GROUP_BY_CHOICES = ("agent", "task", "model", "day")
MAX_SUMMARY_DAYS = 3660
INVALID_GROUP_BY = "group_by must be one of: agent, task, model, day."
INVALID_RANGE = "'from' must not be after 'to'."
RANGE_TOO_LARGE = "A per-day summary covers at most {days} days."
ZERO = Decimal(0)


@dataclass(frozen=True)
class CurrencyTotal:
    currency: str
    cost: Decimal = ZERO
    input_tokens: int = 0
    output_tokens: int = 0
    records: int = 0


@dataclass(frozen=True)
class CostGroup:
    key: str | None
    label: str
    totals: tuple[CurrencyTotal, ...]


@dataclass(frozen=True)
class CostSummary:
    group_by: str
    since: datetime | None
    until: datetime | None
    totals: tuple[CurrencyTotal, ...]
    groups: tuple[CostGroup, ...] = field(default=())


@dataclass(frozen=True)
class BudgetStatus:
    month: str
    configured: bool
    currency: str | None
    limit: Decimal | None
    spent: Decimal
    remaining: Decimal | None
    utilization: Decimal | None
    alert_threshold: Decimal | None
    status: str  # "unconfigured" | "ok" | "warning" | "exceeded"
    other_currencies: tuple[CurrencyTotal, ...]


def cost_records_list(
    company: Company,
    *,
    agent: Agent | int | None = None,
    task: Task | int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[CostRecord]:
    qs = CostRecord.objects.filter(company=company)
    qs = where_given(qs, agent=agent, task=task, occurred_at__gte=since, occurred_at__lt=until)
    return qs.order_by("-occurred_at", "-id")


def _totals(rows) -> tuple[CurrencyTotal, ...]:
    return tuple(
        CurrencyTotal(
            currency=row["currency"],
            cost=row["cost_sum"] if row["cost_sum"] is not None else ZERO,
            input_tokens=row["in_sum"] or 0,
            output_tokens=row["out_sum"] or 0,
            records=row["n"],
        )
        for row in rows
    )


_AGGREGATES = {
    "cost_sum": Sum("cost"),
    "in_sum": Sum("input_tokens"),
    "out_sum": Sum("output_tokens"),
    "n": Count("id"),
}


def cost_totals(
    company: Company,
    *,
    agent: Agent | int | None = None,
    task: Task | int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[CurrencyTotal, ...]:
    """Exact sums per currency (sorted by currency); empty when nothing matches."""
    qs = cost_records_list(company, agent=agent, task=task, since=since, until=until)
    rows = qs.order_by().values("currency").annotate(**_AGGREGATES).order_by("currency")
    return _totals(rows)


def cost_total(
    company: Company, *, currency: str = "USD", agent: Agent | int | None = None, **filters
) -> Decimal:
    """The seed's ``aggregate(agent_id=...)``: the sum in one currency (0 when empty)."""
    for total in cost_totals(company, agent=agent, **filters):
        if total.currency == currency:
            return total.cost
    return ZERO


def _check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and since > until:
        raise InvalidInputError(INVALID_RANGE, code="invalid_range")


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def cost_summary(
    company: Company,
    *,
    group_by: str,
    since: datetime | None = None,
    until: datetime | None = None,
) -> CostSummary:
    """Sums per currency for each agent, task, model or UTC day in ``[since, until)``.

    Groups are ordered by key; ``day`` groups cover every day of the range (days without
    records have no totals), bounded by the data when an end is open.
    """
    if group_by not in GROUP_BY_CHOICES:
        raise InvalidInputError(INVALID_GROUP_BY, code="invalid_group_by")
    _check_range(since, until)
    qs = cost_records_list(company, since=since, until=until).order_by()
    totals = _totals(qs.values("currency").annotate(**_AGGREGATES).order_by("currency"))

    if group_by == "agent":
        rows = qs.values("currency", key=F("agent_id"), label=F("agent__name"))
    elif group_by == "task":
        rows = qs.values("currency", key=F("task_id"), label=F("task__title"))
    elif group_by == "model":
        rows = qs.values("currency", key=F("model"), label=F("model"))
    else:
        rows = qs.annotate(day=TruncDate("occurred_at", tzinfo=UTC)).values(
            "currency", key=F("day"), label=F("day")
        )
    rows = rows.annotate(**_AGGREGATES).order_by(F("key").asc(nulls_last=True), "currency")

    grouped: dict[object, tuple[str, list[dict]]] = {}
    for row in rows:
        grouped.setdefault(row["key"], (row["label"], []))[1].append(row)

    if group_by == "day":
        groups = _day_groups(grouped, since, until)
    else:
        groups = tuple(
            CostGroup(
                key=None if key is None else str(key),
                label="(none)" if label is None else str(label),
                totals=_totals(rows),
            )
            for key, (label, rows) in grouped.items()
        )
    return CostSummary(group_by=group_by, since=since, until=until, totals=totals, groups=groups)


def _day_groups(grouped, since, until) -> tuple[CostGroup, ...]:
    days_with_data = sorted(grouped)
    first = since.astimezone(UTC).date() if since else (days_with_data or [None])[0]
    if until is not None:
        last = (until.astimezone(UTC) - timedelta(microseconds=1)).date()
    else:
        last = days_with_data[-1] if days_with_data else None
    if first is None or last is None or last < first:
        return ()
    if (last - first).days + 1 > MAX_SUMMARY_DAYS:
        raise InvalidInputError(
            RANGE_TOO_LARGE.format(days=MAX_SUMMARY_DAYS), code="range_too_large"
        )
    out = []
    day = first
    while day <= last:
        rows = grouped.get(day, (None, []))[1]
        out.append(CostGroup(key=day.isoformat(), label=day.isoformat(), totals=_totals(rows)))
        day += timedelta(days=1)
    return tuple(out)


def month_bounds(month: date) -> tuple[datetime, datetime]:
    start = _day_start(month.replace(day=1))
    days = calendar.monthrange(month.year, month.month)[1]
    return start, start + timedelta(days=days)


def budget_status(company: Company, *, month: date | None = None) -> BudgetStatus:
    """This month's spend against the company's ``budget.monthly_limit`` setting."""
    month = (month or timezone.now().astimezone(UTC).date()).replace(day=1)
    since, until = month_bounds(month)
    totals = cost_totals(company, since=since, until=until)
    setting = setting_get(company, BUDGET_NAMESPACE, BUDGET_KEY)
    label = f"{month.year:04d}-{month.month:02d}"
    if setting is None:
        return BudgetStatus(
            month=label,
            configured=False,
            currency=None,
            limit=None,
            spent=ZERO,
            remaining=None,
            utilization=None,
            alert_threshold=None,
            status="unconfigured",
            other_currencies=totals,
        )
    budget = MonthlyBudget.model_validate(setting.value)
    spent = next((t.cost for t in totals if t.currency == budget.currency), ZERO)
    utilization = spent / budget.amount
    if spent > budget.amount:
        status = "exceeded"
    elif utilization >= budget.alert_threshold:
        status = "warning"
    else:
        status = "ok"
    return BudgetStatus(
        month=label,
        configured=True,
        currency=budget.currency,
        limit=budget.amount,
        spent=spent,
        remaining=budget.amount - spent,
        utilization=utilization.quantize(Decimal("0.0001")),
        alert_threshold=budget.alert_threshold,
        status=status,
        other_currencies=tuple(t for t in totals if t.currency != budget.currency),
    )
