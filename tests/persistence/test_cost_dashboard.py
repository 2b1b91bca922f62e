"""The cost dashboard renders per-day and per-agent SVG charts for the viewer's company."""

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.utils import timezone

from persistence.dashboard.svg import CHAR_PX, Bar, bar_chart, column_chart, format_money
from persistence.models import Setting
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    CostRecordFactory,
    MembershipFactory,
)


def test_svg_charts_escape_labels_and_scale_bars():
    svg = bar_chart(
        [Bar("<script>", Decimal("2")), Bar("b", Decimal("1"))], title="t & u", unit=" USD"
    )
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert "t &amp; u" in svg
    widths = [float(w) for w in re.findall(r'<rect class="bar" [^>]*width="([\d.]+)"', svg)]
    assert widths[0] == pytest.approx(2 * widths[1])
    columns = column_chart([Bar("01", Decimal(0)), Bar("02", Decimal("3"))], title="days")
    assert columns.count('<rect class="bar"') == 2
    assert "cdn" not in columns.lower()


@pytest.fixture
def dashboard_world(db):
    company = CompanyFactory(name="Acme")
    other = CompanyFactory(name="Rival")
    alice = AgentFactory(company=company, name="alice")
    bob = AgentFactory(company=company, name="bob")
    today = timezone.now()
    # two days ago, but never in the previous month (the budget counts this month's costs)
    month_start = today.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    earlier_this_month = max(today - dt.timedelta(days=2), month_start)
    CostRecordFactory(company=company, agent=alice, cost="1.25", occurred_at=today)
    CostRecordFactory(company=company, agent=bob, cost="0.50", occurred_at=earlier_this_month)
    CostRecordFactory(company=company, agent=bob, cost="3", currency="EUR", occurred_at=today)
    CostRecordFactory(
        company=other,
        agent=AgentFactory(company=other, name="mallory"),
        cost="999",
        occurred_at=today,
    )
    Setting.objects.create(
        company=company,
        namespace="budget",
        key="monthly_limit",
        value={"amount": "2", "currency": "USD", "alert_threshold": "0.5"},
        created_at=today,
        updated_at=today,
    )
    membership = MembershipFactory(company=company, role="viewer")
    return company, other, membership


@pytest.mark.django_db
def test_dashboard_renders_charts_with_data(client, dashboard_world):
    *_, membership = dashboard_world
    client.force_login(membership.user)
    response = client.get("/dashboard/costs", {"days": 7})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Costs — Acme" in html
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 4  # USD+EUR
    assert "Cost per day (USD)" in html and "Cost per agent (EUR)" in html
    usd = html.index("Cost per day (USD)")
    assert usd < html.index("Cost per day (EUR)")  # the budget's currency first
    # 7 day columns per currency chart; alice and bob in the USD per-agent chart.
    usd_days = html[usd : html.index("</svg>", usd)]
    assert usd_days.count('<rect class="bar"') == 7
    assert "alice: 1.25 USD" in html
    assert "bob: 0.50 USD" in html
    assert "1.75</strong> of 2.00 USD" in html
    assert "warning" in html
    assert "mallory" not in html and "999" not in html and "Rival" not in html
    assert "cdn" not in html.lower()
    assert "/static/console/console.css" in html  # the console's layout and header
    assert '<header class="topbar">' in html
    assert 'aria-current="page">Costs</a>' in html


@pytest.mark.django_db
def test_dashboard_without_costs(client, db):
    membership = MembershipFactory(company=CompanyFactory(name="Quiet"), role="admin")
    client.force_login(membership.user)
    html = client.get("/dashboard/costs").content.decode()
    assert "No costs recorded in this period:" in html
    assert "No monthly budget is set" in html


@pytest.mark.django_db
def test_dashboard_requires_login_and_membership(client, dashboard_world):
    _, other, membership = dashboard_world
    anonymous = client.get("/dashboard/costs")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/console/login")
    client.force_login(membership.user)
    assert client.get("/dashboard/costs", {"company": other.slug}).status_code == 404
    loner = MembershipFactory(company=other).user
    loner.company_memberships.all().delete()
    client.force_login(loner)
    assert client.get("/dashboard/costs").status_code == 403


@pytest.mark.django_db
def test_dashboard_picks_company_by_membership(client, dashboard_world):
    company, other, membership = dashboard_world
    MembershipFactory(user=membership.user, company=other, role="viewer")
    client.force_login(membership.user)
    html = client.get("/dashboard/costs", {"company": other.slug}).content.decode()
    assert "Costs — Rival" in html and "mallory" in html and "alice" not in html
    assert f'<option value="{company.slug}"' in html


def test_money_keeps_small_amounts_readable():
    assert [
        format_money(Decimal(v))
        for v in ["0", "0.0021", "0.00214567", "0.5", "0.000042", "1", "1234.567"]
    ] == ["0.00", "0.0021", "0.0021", "0.50", "0.000042", "1.00", "1,234.57"]


@pytest.mark.django_db
def test_a_small_total_is_not_shown_as_zero(client):
    company = CompanyFactory(name="Thrifty")
    CostRecordFactory(
        company=company,
        agent=AgentFactory(company=company, name="frugal"),
        cost="0.0021",
        occurred_at=timezone.now(),
    )
    client.force_login(MembershipFactory(company=company, role="viewer").user)
    html = client.get("/dashboard/costs").content.decode()
    assert "USD: 0.0021 over 1 call</h2>" in html
    assert '<td data-label="Cost" class="num">0.0021</td>' in html
    assert "0.00 over" not in html


def _ticks(svg):
    return re.findall(r'<text class="tick" x="(\d+)"[^>]*>([^<]*)</text>', svg)


def test_axis_labels_fit_left_of_the_plot():
    svg = column_chart(
        [Bar("01", Decimal("1234.56")), Bar("02", Decimal(3))], title="d", unit=" USD"
    )
    for x, text in _ticks(svg):
        assert int(x) - CHAR_PX * len(text) >= 0, text
    assert ("1,234.56 USD" in svg) and ("0</text>" in svg)


def test_bar_values_fit_right_of_the_bars():
    width = 720
    svg = bar_chart([Bar("a", Decimal("1234567.89"))], title="a", unit=" USD", width=width)
    [(x, text)] = re.findall(r'<text class="value" x="([\d.]+)"[^>]*>([^<]*)</text>', svg)
    assert text == "1,234,567.89 USD"
    assert float(x) + CHAR_PX * len(text) <= width
