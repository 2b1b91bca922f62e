"""Cost sums: exact decimals, never mixing currencies, empty ranges, grouped summaries and the
monthly budget, through the selectors and GET /costs/summary and /costs/budget."""

import datetime as dt
from decimal import Decimal

import pytest

from persistence.models import Setting
from persistence.selectors.costs import budget_status, cost_summary, cost_totals
from persistence.services.costs import cost_record_create
from synthorg.errors import InvalidInputError
from tests.persistence.factories import AgentFactory, CostRecordFactory, TaskFactory, at


def _record(company, **fields):
    defaults = {"provider": "openai", "model": "gpt-4o", "input_tokens": 10, "output_tokens": 1}
    return cost_record_create(company=company, **{**defaults, **fields})


def _budget(company, value):
    now = at(1)
    return Setting.objects.create(
        company=company,
        namespace="budget",
        key="monthly_limit",
        value=value,
        created_at=now,
        updated_at=now,
    )


@pytest.mark.django_db
def test_cost_record_create_contract(company):
    agent = AgentFactory(company=company)
    task = TaskFactory(company=company)
    record = _record(
        company,
        agent=agent,
        task=task,
        provider="anthropic",
        model="claude",
        input_tokens=1200,
        output_tokens=300,
        cost=Decimal("0.0000015"),
        currency="eur",
        occurred_at=at(5),
    )
    record.refresh_from_db()
    assert (record.agent, record.task, record.currency, record.occurred_at) == (
        agent,
        task,
        "EUR",
        at(5),
    )
    assert record.cost == Decimal("0.0000015")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"cost": "abc"}, "invalid_cost"),
        ({"cost": "NaN"}, "invalid_cost"),
        ({"cost": "1", "currency": "dollars"}, "invalid_currency"),
        ({"cost": "1", "input_tokens": -1}, "invalid_tokens"),
    ],
)
def test_cost_record_create_rejects_bad_input(company, fields, code):
    with pytest.raises(InvalidInputError) as exc:
        _record(company, **fields)
    assert exc.value.code == code
    assert cost_totals(company) == ()


@pytest.mark.django_db
def test_cost_record_create_rejects_other_company_agent(company, outsider):
    with pytest.raises(InvalidInputError) as exc:
        _record(company, agent=outsider.agent, cost="1")
    assert exc.value.code == "cross_company_reference"


@pytest.mark.django_db
def test_sums_are_exact_and_per_currency(company):
    for amount in ("0.1", "0.2", "0.0000000001"):
        _record(company, cost=amount, occurred_at=at(1))
    _record(company, cost="5", currency="EUR", occurred_at=at(1))
    totals = cost_totals(company)
    assert [(t.currency, t.cost, t.records, t.input_tokens) for t in totals] == [
        ("EUR", Decimal("5"), 1, 10),
        ("USD", Decimal("0.3000000001"), 3, 30),
    ]


@pytest.mark.django_db
def test_empty_range_has_no_totals(company):
    _record(company, cost="1", occurred_at=at(10))
    summary = cost_summary(company, group_by="agent", since=at(1), until=at(2))
    assert summary.totals == ()
    assert summary.groups == ()
    days = cost_summary(company, group_by="day", since=at(1, 0), until=at(3, 0))
    assert [(g.key, g.totals) for g in days.groups] == [("2026-03-01", ()), ("2026-03-02", ())]
    assert cost_summary(company, group_by="day").groups[0].key == "2026-03-10"


@pytest.mark.django_db
def test_summary_bounds_are_inclusive_exclusive(company):
    _record(company, cost="1", occurred_at=at(1, 0))
    _record(company, cost="2", occurred_at=at(2, 0))
    summary = cost_summary(company, group_by="model", since=at(1, 0), until=at(2, 0))
    assert [(t.currency, t.cost) for t in summary.totals] == [("USD", Decimal("1"))]


@pytest.mark.django_db
def test_summary_rejects_bad_parameters(company):
    with pytest.raises(InvalidInputError) as exc:
        cost_summary(company, group_by="planet")
    assert exc.value.code == "invalid_group_by"
    with pytest.raises(InvalidInputError) as exc:
        cost_summary(company, group_by="day", since=at(3), until=at(2))
    assert exc.value.code == "invalid_range"
    with pytest.raises(InvalidInputError) as exc:
        cost_summary(company, group_by="day", since=at(1, year=2000), until=at(1, year=2026))
    assert exc.value.code == "range_too_large"


@pytest.mark.django_db
def test_summary_endpoint_by_agent(caller, peer, outsider):
    company = caller.company
    _record(company, agent=caller.agent, cost="0.1", occurred_at=at(1))
    _record(company, agent=caller.agent, cost="0.2", occurred_at=at(2))
    _record(company, agent=peer.agent, cost="3", currency="EUR", occurred_at=at(2))
    _record(company, cost="1", occurred_at=at(2))  # no agent
    _record(outsider.company, agent=outsider.agent, cost="100", occurred_at=at(2))
    response = caller.client.get(
        "/api/v1/costs/summary",
        {"group_by": "agent", "from": "2026-03-01T00:00:00Z", "to": "2026-04-01T00:00:00Z"},
    )
    assert response.status_code == 200
    usd = lambda cost, n, i: {  # noqa: E731
        "currency": "USD",
        "cost": cost,
        "input_tokens": i,
        "output_tokens": n,
        "records": n,
    }
    assert response.json() == {
        "group_by": "agent",
        "from": "2026-03-01T00:00:00Z",
        "to": "2026-04-01T00:00:00Z",
        "totals": [
            {
                "currency": "EUR",
                "cost": "3.0000000000",
                "input_tokens": 10,
                "output_tokens": 1,
                "records": 1,
            },
            usd("1.3000000000", 3, 30),
        ],
        "groups": [
            {
                "key": str(caller.agent.pk),
                "label": caller.agent.name,
                "totals": [usd("0.3000000000", 2, 20)],
            },
            {
                "key": str(peer.agent.pk),
                "label": peer.agent.name,
                "totals": [
                    {
                        "currency": "EUR",
                        "cost": "3.0000000000",
                        "input_tokens": 10,
                        "output_tokens": 1,
                        "records": 1,
                    }
                ],
            },
            {"key": None, "label": "(none)", "totals": [usd("1.0000000000", 1, 10)]},
        ],
    }


@pytest.mark.django_db
def test_summary_endpoint_by_task_model_and_day(caller):
    company = caller.company
    task = TaskFactory(company=company, title="write report")
    _record(company, task=task, model="a", cost="0.5", occurred_at=at(1, 23))
    _record(company, task=task, model="b", cost="0.25", occurred_at=at(3, 1))
    by_task = caller.client.get("/api/v1/costs/summary", {"group_by": "task"}).json()
    assert [(g["key"], g["label"], g["totals"][0]["cost"]) for g in by_task["groups"]] == [
        (str(task.pk), "write report", "0.7500000000")
    ]
    by_model = caller.client.get("/api/v1/costs/summary", {"group_by": "model"}).json()
    assert [(g["key"], g["totals"][0]["cost"]) for g in by_model["groups"]] == [
        ("a", "0.5000000000"),
        ("b", "0.2500000000"),
    ]
    by_day = caller.client.get("/api/v1/costs/summary", {"group_by": "day"}).json()
    assert [(g["key"], [t["cost"] for t in g["totals"]]) for g in by_day["groups"]] == [
        ("2026-03-01", ["0.5000000000"]),
        ("2026-03-02", []),
        ("2026-03-03", ["0.2500000000"]),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "group_by"),
        ({"group_by": "planet"}, "group_by"),
        ({"group_by": "day", "from": "yesterday"}, "from"),
    ],
)
def test_summary_endpoint_validates(caller, params, field):
    response = caller.client.get("/api/v1/costs/summary", params)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert response.json()["errors"][0]["field"] == field


@pytest.mark.django_db
def test_summary_endpoint_inverted_range(caller):
    response = caller.client.get(
        "/api/v1/costs/summary", {"group_by": "day", "from": "2026-03-02", "to": "2026-03-01"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_range"


@pytest.mark.django_db
def test_budget_unconfigured(caller):
    _record(caller.company, cost="2", occurred_at=at(4))
    body = caller.client.get("/api/v1/costs/budget", {"month": "2026-03"}).json()
    assert body == {
        "month": "2026-03",
        "configured": False,
        "currency": None,
        "limit": None,
        "spent": "0.0000000000",
        "remaining": None,
        "utilization": None,
        "alert_threshold": None,
        "status": "unconfigured",
        "other_currencies": [
            {
                "currency": "USD",
                "cost": "2.0000000000",
                "input_tokens": 10,
                "output_tokens": 1,
                "records": 1,
            }
        ],
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("spent", "status", "remaining", "utilization"),
    [
        (["10", "20"], "ok", "70.0000000000", "0.3000"),
        (["80"], "warning", "20.0000000000", "0.8000"),
        (["100"], "warning", "0.0000000000", "1.0000"),
        (["100", "0.01"], "exceeded", "-0.0100000000", "1.0001"),
    ],
)
def test_budget_statuses(caller, spent, status, remaining, utilization):
    company = caller.company
    _budget(company, {"amount": "100", "currency": "USD"})
    for amount in spent:
        _record(company, cost=amount, occurred_at=at(15))
    _record(company, cost="1000", occurred_at=at(15, month=2))  # another month
    _record(company, cost="7", currency="EUR", occurred_at=at(15))  # another currency
    body = caller.client.get("/api/v1/costs/budget", {"month": "2026-03"}).json()
    assert body["status"] == status
    assert body["remaining"] == remaining
    assert body["utilization"] == utilization
    assert body["limit"] == "100.0000000000"
    assert [c["currency"] for c in body["other_currencies"]] == ["EUR"]


@pytest.mark.django_db
def test_budget_defaults_to_this_month(caller):
    _budget(caller.company, {"amount": "10", "currency": "USD"})
    body = caller.client.get("/api/v1/costs/budget").json()
    assert body["month"] == dt.datetime.now(dt.UTC).strftime("%Y-%m")
    assert body["spent"] == "0.0000000000"
    bad = caller.client.get("/api/v1/costs/budget", {"month": "2026-13"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "month"


@pytest.mark.django_db
def test_budget_is_per_company(caller, outsider):
    _budget(outsider.company, {"amount": "1", "currency": "USD"})
    CostRecordFactory(company=outsider.company, cost="5", occurred_at=at(2))
    assert budget_status(caller.company, month=dt.date(2026, 3, 1)).status == "unconfigured"
    assert budget_status(outsider.company, month=dt.date(2026, 3, 1)).status == "exceeded"
