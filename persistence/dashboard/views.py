"""The human cost dashboard: cost per day and per agent, as server-side SVG charts, inside
the console (its layout, its company switcher, its access rules)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe

from persistence.console.access import ConsoleUser, console_user, console_view, select_company
from persistence.dashboard.svg import Bar, bar_chart, column_chart, format_money
from persistence.selectors.costs import budget_status, cost_summary

DEFAULT_DAYS = 30
MAX_DAYS = 366


def _days(request) -> int:
    try:
        return min(max(int(request.GET.get("days", DEFAULT_DAYS)), 1), MAX_DAYS)
    except ValueError:
        return DEFAULT_DAYS


def _currency_charts(day_summary, agent_summary, currency: str) -> dict:
    def amount(totals):
        return next((t.cost for t in totals if t.currency == currency), 0)

    days = [
        Bar(
            label=g.key[5:],  # MM-DD
            value=amount(g.totals),
            tooltip=f"{g.key}: {format_money(amount(g.totals))} {currency}",
        )
        for g in day_summary.groups
    ]
    agents = sorted(
        (
            Bar(
                label=g.label,
                value=amount(g.totals),
                tooltip=f"{g.label}: {format_money(amount(g.totals))} {currency}",
            )
            for g in agent_summary.groups
            if amount(g.totals)
        ),
        key=lambda b: (-b.value, b.label),
    )
    total = next((t for t in day_summary.totals if t.currency == currency), None)
    return {
        "currency": currency,
        "total": total,
        "per_day_svg": mark_safe(  # svg.py escapes every text it embeds
            column_chart(days, title=f"Cost per day ({currency})", unit=f" {currency}")
        ),
        "per_agent_svg": mark_safe(  # svg.py escapes every text it embeds
            bar_chart(agents, title=f"Cost per agent ({currency})", unit=f" {currency}")
        ),
        "total_display": format_money(total.cost) if total else "0.00",
        # calls recorded at no cost (a local model): no chart of zeros, a sentence instead
        "has_cost": any(bar.value for bar in days),
        "agent_rows": [(bar.label, format_money(bar.value)) for bar in agents],
    }


@console_view
def cost_dashboard(request, user: ConsoleUser):
    slug = request.GET.get("company")
    if slug and slug != user.company.slug:  # a link naming one of the user's companies
        select_company(request, slug)  # 404 for a company that is not theirs
        user = console_user(request)
        request.console = user
    company = user.company
    days = _days(request)
    today = timezone.now().astimezone(UTC).date()
    since = datetime.combine(today - timedelta(days=days - 1), datetime.min.time(), tzinfo=UTC)
    until = datetime.combine(today + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    per_day = cost_summary(company, group_by="day", since=since, until=until)
    per_agent = cost_summary(company, group_by="agent", since=since, until=until)
    budget = budget_status(company)
    currencies = [t.currency for t in per_day.totals]
    if budget.currency in currencies:  # the budget's currency first
        currencies.remove(budget.currency)
        currencies.insert(0, budget.currency)
    context = {
        "section": "costs",
        "company": company,
        "days": days,
        "since": since,
        "until": until - timedelta(days=1),
        "budget": budget,
        "budget_spent": format_money(budget.spent) if budget.configured else "",
        "budget_limit": format_money(budget.limit) if budget.configured else "",
        "budget_remaining": format_money(budget.remaining) if budget.configured else "",
        "charts": [_currency_charts(per_day, per_agent, c) for c in currencies],
    }
    return render(request, "persistence/cost_dashboard.html", context)
