"""Unknown body fields are refused (400 naming each field) on every write endpoint, and
cost records refuse amounts, currencies and token counts that cannot be real."""

import pytest

from orgmemory.models import OperationLogEntry
from persistence.models import AuditEntry, CostRecord, Message, Task
from tests.persistence.factories import TaskFactory

pytestmark = pytest.mark.django_db


def assert_unknown(response, *fields):
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "validation_error"
    assert [(e["field"], e["code"]) for e in body["errors"]] == [
        (f, "unknown_field") for f in fields
    ]
    assert body["errors"][0]["message"] == f"Unknown field: {fields[0]}."


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("post", "/api/v1/tasks", {"title": "t"}),
        ("post", "/api/v1/messages", {"channel": "c", "content": "x"}),
        ("post", "/api/v1/costs", {"provider": "p", "model": "m", "cost": "1"}),
        ("post", "/api/v1/audit", {"action_type": "a"}),
        ("post", "/api/v1/heartbeats", {}),
        ("post", "/api/v1/checkpoints", {"execution_id": "e"}),
        ("post", "/api/v1/memories", {"content": "x", "category": "semantic"}),
        ("post", "/api/v1/memories/search", {"query": "x"}),
        ("post", "/api/v1/memories/context", {"query": "x", "token_budget": 100}),
        ("post", "/api/v1/shared", {"content": "x", "category": "semantic"}),
        ("post", "/api/v1/org/facts", {"content": "x", "category": "adr"}),
        ("post", "/api/v1/org/facts/query", {"context": "x"}),
    ],
)
def test_agent_write_endpoints_refuse_unknown_fields(caller, method, url, body):
    before = (Task.objects.count(), Message.objects.count(), CostRecord.objects.count())
    response = getattr(caller.client, method)(url, {**body, "tagz": ["x"]}, format="json")
    assert_unknown(response, "tagz")
    assert (Task.objects.count(), Message.objects.count(), CostRecord.objects.count()) == before


def test_every_unknown_field_is_named_nested_ones_too(caller):
    response = caller.client.post(
        "/api/v1/memories",
        {"memories": [{"content": "x", "category": "semantic", "zeta": 1, "alpha": 2}]},
        format="json",
    )
    body = response.json()
    assert response.status_code == 400
    assert [e["field"] for e in body["errors"]] == ["memories.0.alpha", "memories.0.zeta"]


def test_human_write_endpoints_refuse_unknown_fields(caller, human_client):
    task = TaskFactory(company=caller.company)
    assert_unknown(
        human_client.patch(f"/api/v1/tasks/{task.pk}", {"statuz": "done"}, format="json"),
        "statuz",
    )
    assert_unknown(
        human_client.put(
            "/api/v1/settings/budget/monthly_limit",
            {"value": {"amount": "1", "currency": "USD"}, "note": "x"},
            format="json",
        ),
        "note",
    )
    assert_unknown(
        human_client.post("/api/v1/projects", {"name": "p", "owner": 1}, format="json"), "owner"
    )


def test_query_strings_may_carry_pagination_and_filters(caller):
    assert caller.client.get("/api/v1/org/facts?page=1&anything=1").status_code == 200
    assert caller.client.get("/api/v1/costs/summary?group_by=day&page_size=5").status_code == 200


def test_a_fact_with_a_misspelt_field_is_not_published(human_client):
    response = human_client.post(
        "/api/v1/org/facts",
        {"content": "Use UUIDs", "category": "adr", "tagz": ["ids"]},
        format="json",
    )
    assert_unknown(response, "tagz")
    assert not OperationLogEntry.objects.exists()


def test_revising_a_fact_without_tags_keeps_them(human_client):
    first = human_client.post(
        "/api/v1/org/facts",
        {"content": "Use UUIDs", "category": "adr", "tags": ["ids", "db"]},
        format="json",
    ).json()
    revised = human_client.post(
        "/api/v1/org/facts",
        {"content": "Use UUIDv7", "category": "adr", "fact_id": first["fact_id"]},
        format="json",
    )
    assert revised.status_code == 201, revised.content
    assert revised.json()["tags"] == ["db", "ids"] or revised.json()["tags"] == ["ids", "db"]
    assert sorted(OperationLogEntry.objects.get(version=2).tags) == ["db", "ids"]
    cleared = human_client.post(
        "/api/v1/org/facts",
        {"content": "Use UUIDv7.", "category": "adr", "fact_id": first["fact_id"], "tags": []},
        format="json",
    )
    assert cleared.json()["tags"] == []


# --- costs --------------------------------------------------------------------------------

COST = {"provider": "openai", "model": "gpt-4o", "cost": "0.10"}


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"currency": "ZZZ"}, None, "invalid_currency"),
        ({"currency": "usd"}, None, None),
        ({"input_tokens": 10**12}, "input_tokens", "max_value"),
        ({"output_tokens": 100_000_001}, "output_tokens", "max_value"),
        ({"input_tokens": -1}, "input_tokens", "min_value"),
        ({"cost": "-0.10"}, None, "negative_cost"),
        ({"cost": "NaN"}, "cost", "invalid"),
    ],
)
def test_costs_refuse_what_cannot_be_a_real_call(caller, change, field, code):
    response = caller.client.post("/api/v1/costs", {**COST, **change}, format="json")
    if code is None:
        assert response.status_code == 201
        assert CostRecord.objects.get().currency == "USD"
        return
    assert response.status_code == 400, response.content
    body = response.json()
    if field is None:
        assert body["code"] == code
    else:
        assert (body["errors"][0]["field"], body["errors"][0]["code"]) == (field, code)
    assert not CostRecord.objects.exists()


def test_an_admin_records_a_correction_as_a_negative_cost(human_client):
    response = human_client.post(
        "/api/v1/costs", {**COST, "cost": "-0.10", "currency": "EUR"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert str(CostRecord.objects.get().cost) == "-0.1000000000"


def test_unknown_currency_is_refused_by_the_service_too(company):
    from persistence.services.costs import cost_record_create
    from synthorg.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="not an ISO 4217"):
        cost_record_create(company=company, provider="p", model="m", cost="1", currency="ABC")
    assert not CostRecord.objects.exists()
    assert AuditEntry.objects.count() == 0


def test_the_schema_says_request_bodies_take_no_other_fields():
    from drf_spectacular.generators import SchemaGenerator

    components = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    for name in ("FactWriteRequest", "TaskRequest", "PatchedTaskRequest", "MemoryStoreRequest"):
        assert components[name]["additionalProperties"] is False, name
    assert "additionalProperties" not in components["Task"]  # responses are not constrained
    assert components["MessageRequest"]["properties"]["metadata"]["additionalProperties"] is True
