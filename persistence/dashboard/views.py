"""The human cost dashboard: cost per day and per agent, as server-side SVG charts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe

from persistence.dashboard.svg import Bar, bar_chart, column_chart
from persistence.principal import Principal
from persistence.selectors.costs import budget_status, cost_summary
from persistence.selectors.identity import human_companies, human_principal

DEFAULT_DAYS = 30
MAX_DAYS = 366


def _principal(request) -> Principal | None:
    slug = request.GET.get("company")
    if slug:
        principal = human_principal(request.user, company_slug=slug)
        if principal is None:
            raise Http404("No such company among yours.")  # never reveals other companies
        return principal
    first = human_companies(request.user).order_by("name").first()  # the page's default
    return None if first is None else human_principal(request.user, company=first)


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
            tooltip=f"{g.key}: {amount(g.totals)} {currency}",
        )
        for g in day_summary.groups
    ]
    agents = sorted(
        (
            Bar(label=g.label, value=amount(g.totals), tooltip=f"{g.label}: {amount(g.totals)}")
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
        "agent_rows": agents,
    }


@login_required
def cost_dashboard(request):
    principal = _principal(request)
    if principal is None:
        return render(request, "persistence/cost_dashboard.html", {"company": None}, status=403)
    company = principal.company
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
        "company": company,
        "companies": list(human_companies(request.user).order_by("name")),
        "days": days,
        "since": since,
        "until": until - timedelta(days=1),
        "budget": budget,
        "charts": [_currency_charts(per_day, per_agent, c) for c in currencies],
    }
    return render(request, "persistence/cost_dashboard.html", context)
