"""Hostile and generated input never gets a 500, and every error under /api/ is a problem.

Each case here once answered 500 (issue 14); the fix lives in one shared mechanism
(``synthorg.api``: parser, fields, middleware, exception handler), so the tests hit several
endpoints per mechanism.
"""

import json
import logging

import pytest

from memory.core.models.memory import Memory
from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CostRecord,
    Message,
    ParkedContext,
    PersonalityPreset,
    Task,
)

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def assert_problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"https://synthorg.dev/problems/{code}"
    assert "{" not in body["title"]  # a fixed title, never a message template
    return body


def post_raw(client, url, raw: str, method="POST"):
    return client.generic(method, url, raw.encode("utf-8"), content_type="application/json")


# --- schema and services agree on what is required ----------------------------------------


def test_a_cost_without_token_counts_records_zero_tokens(caller):
    response = caller.client.post(
        "/api/v1/costs", {"provider": "openai", "model": "gpt-4o", "cost": "0.10"}, format="json"
    )
    assert response.status_code == 201, response.content
    record = CostRecord.objects.get()
    assert (record.input_tokens, record.output_tokens) == (0, 0)
    assert response.json()["input_tokens"] == 0


def test_runtime_state_put_without_status_is_a_400_naming_status(caller):
    url = f"/api/v1/runtime-states/{caller.agent.pk}"
    response = caller.client.put(url, {"state": {"step": 1}}, format="json")
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"] == [
        {"field": "status", "message": "This field is required.", "code": "required"}
    ]
    assert not AgentRuntimeState.objects.exists()
    ok = caller.client.put(url, {"status": "active", "state": {"step": 1}}, format="json")
    assert ok.status_code == 200
    assert AgentRuntimeState.objects.get().state == {"step": 1}


# --- datetimes: any UTC offset the parser accepts is converted, never sent raw -----------


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/audit?from=0121-12-07T06:06:00-21:01",
        "/api/v1/costs?to=2026-03-01T00:00:00%2B23:59",
        "/api/v1/memories?created_after=2026-03-01T00:00:00-16:30",
        "/api/v1/memories?created_before=2026-03-01T00:00:00%2B16:00",
    ],
)
def test_date_filters_with_offsets_postgres_does_not_take(caller, url):
    response = caller.client.get(url)
    assert response.status_code == 200, response.content


def test_a_date_filter_beyond_the_range_once_in_utc_is_a_400(caller):
    response = caller.client.get("/api/v1/costs?from=0001-01-01T00:00:00%2B05:00")
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == "from"
    assert body["errors"][0]["code"] == "out_of_range"


def test_date_filter_offsets_still_filter_correctly(caller):
    from datetime import UTC, datetime

    from persistence.services.costs import cost_record_create

    cost_record_create(
        company=caller.company,
        agent=caller.agent,
        provider="p",
        model="m",
        cost="1",
        occurred_at=datetime(2026, 3, 1, 20, 0, tzinfo=UTC),
    )
    # 2026-03-02T12:00-16:30 is 2026-03-03T04:30Z: after the record.
    after = caller.client.get("/api/v1/costs?from=2026-03-02T12:00:00-16:30").json()
    before = caller.client.get("/api/v1/costs?to=2026-03-02T12:00:00-16:30").json()
    assert (len(after["results"]), len(before["results"])) == (0, 1)


# --- bodies: depth, NUL and lone surrogates, in any endpoint --------------------------------


@pytest.mark.parametrize(
    "url", ["/api/v1/memories", "/api/v1/messages", "/api/v1/org/facts", "/api/v1/tasks"]
)
@pytest.mark.parametrize("depth", [100, 1_000, 100_000])
def test_deeply_nested_json_is_a_400(caller, url, depth):
    response = post_raw(caller.client, url, "[" * depth + "]" * depth)
    body = assert_problem(response, 400, "json_too_deep")
    assert body["detail"] == "JSON may not be nested more than 64 levels deep."


def test_nesting_inside_an_object_field_is_bounded_too(caller):
    raw = '{"channel": "c", "content": "x", "metadata": ' + '{"a": ' * 80 + "1" + "}" * 81
    response = post_raw(caller.client, "/api/v1/messages", raw)
    assert_problem(response, 400, "json_too_deep")
    assert not Message.objects.exists()


@pytest.mark.parametrize("bad", ["\\u0000", "\\ud800", "a\\udfffb"])
@pytest.mark.parametrize(
    ("url", "template", "field"),
    [
        ("/api/v1/tasks", '{"title": "t%s"}', "title"),
        (
            "/api/v1/messages",
            '{"channel": "c", "content": "x", "metadata": {"k": "%s"}}',
            "metadata.k",
        ),
        (
            "/api/v1/messages",
            '{"channel": "c", "content": "x", "metadata": {"k%s": 1}}',
            "metadata.k%s",
        ),
        ("/api/v1/memories", '{"content": "c%s", "category": "semantic"}', "content"),
        (
            "/api/v1/memories",
            '{"memories": [{"content": "ok", "category": "semantic", "tags": ["x%s"]}]}',
            "memories[0].tags[0]",
        ),
        ("/api/v1/org/facts", '{"content": "c%s", "category": "adr"}', "content"),
        ("/api/v1/audit", '{"action_type": "a", "details": {"x": ["%s"]}}', "details.x[0]"),
    ],
)
def test_nul_and_lone_surrogates_in_any_string_are_a_400(caller, url, template, field, bad):
    before = {model: model.objects.count() for model in (Task, Message, Memory, AuditEntry)}
    response = post_raw(caller.client, url, template % bad)
    body = assert_problem(response, 400, "invalid_characters")
    assert body["errors"][0]["code"] == "invalid_characters"
    if "%s" not in field:
        assert body["errors"][0]["field"] == field
    assert {model: model.objects.count() for model in before} == before


@pytest.mark.parametrize(
    ("url", "raw", "field"),
    [
        (
            "/api/v1/messages",
            '{"channel": "c", "content": "x", "metadata": {"n": 1e999}}',
            "metadata.n",
        ),
        ("/api/v1/tasks", '{"title": -1e400}', "title"),
    ],
)
def test_numbers_that_overflow_to_infinity_are_a_400(caller, url, raw, field):
    body = assert_problem(post_raw(caller.client, url, raw), 400, "number_out_of_range")
    assert body["errors"][0]["field"] == field
    assert not Message.objects.exists() and not Task.objects.exists()


def test_a_valid_surrogate_pair_is_text(caller):
    response = post_raw(caller.client, "/api/v1/tasks", '{"title": "deploy \\ud83d\\ude80"}')
    assert response.status_code == 201, response.content
    assert Task.objects.get().title == "deploy \U0001f680"


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/settings/a%00b/key",
        "/api/v1/sessions/a%00b/end",
        "/api/v1/messages/history?channel=a%00b",
        "/api/v1/tasks?status=%00",
        "/api/v1/memories?namespace=x%00",
    ],
)
def test_nul_in_the_url_is_a_400(caller, url):
    method = caller.client.post if url.endswith("/end") else caller.client.get
    body = assert_problem(method(url), 400, "invalid_characters")
    assert body["errors"][0]["field"] in {"path", "query"}


def test_nul_in_a_header_is_a_400(human_client):
    response = human_client.get("/api/v1/tasks", HTTP_X_COMPANY="a\x00b")
    body = assert_problem(response, 400, "invalid_characters")
    assert body["errors"][0]["field"] == "header X-Company"


# --- object-typed fields given something else ---------------------------------------------


@pytest.mark.parametrize("value", [[1, 2], "text", 7, True])
@pytest.mark.parametrize(
    ("url", "base", "field", "model"),
    [
        ("/api/v1/messages", {"channel": "c", "content": "x"}, "metadata", Message),
        ("/api/v1/audit", {"action_type": "a"}, "details", AuditEntry),
        ("/api/v1/heartbeats", {}, "details", None),
        ("/api/v1/lifecycle-events", {"event_type": "started"}, "details", None),
        ("/api/v1/checkpoints", {"execution_id": "e"}, "state", Checkpoint),
        ("/api/v1/parked-contexts", {"execution_id": "e"}, "context", ParkedContext),
        ("/api/v1/artifacts", {"name": "a", "artifact_type": "doc"}, "metadata", Artifact),
    ],
)
def test_object_fields_refuse_other_json(caller, url, base, field, model, value):
    response = caller.client.post(url, {**base, field: value}, format="json")
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == field
    assert body["errors"][0]["code"] == "not_an_object"
    if model is not None:
        assert model.objects.count() == (1 if model is AuditEntry else 0)


def test_runtime_state_and_preset_objects(caller, human_client):
    url = f"/api/v1/runtime-states/{caller.agent.pk}"
    response = caller.client.put(url, {"status": "idle", "state": [1]}, format="json")
    assert assert_problem(response, 400, "validation_error")["errors"][0]["field"] == "state"
    response = human_client.post(
        "/api/v1/personality-presets", {"name": "p", "traits": "bold"}, format="json"
    )
    assert assert_problem(response, 400, "validation_error")["errors"][0]["field"] == "traits"
    assert not PersonalityPreset.objects.exists()


def test_object_fields_are_documented_as_objects():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    props = schema["components"]["schemas"]["MessageRequest"]["properties"]
    assert props["metadata"]["type"] == "object"


# --- the monthly budget -------------------------------------------------------------------


@pytest.mark.parametrize("month", ["0000-01", "9999-12", "2026-13", "2026-00", "２０２６-01"])
def test_budget_months_outside_the_calendar_are_a_400(caller, month):
    response = caller.client.get("/api/v1/costs/budget", {"month": month})
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == "month"


@pytest.mark.parametrize("month", ["0001-01", "9998-12", "2026-02"])
def test_budget_months_at_the_edges(caller, month):
    response = caller.client.get("/api/v1/costs/budget", {"month": month})
    assert response.status_code == 200
    assert response.json()["month"] == month


# --- problem+json for errors raised outside views --------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/nothing-here",
        "/api/v1/tasks/not-a-number",
        "/api/v1/memories/not-a-uuid",
        "/api/v1/org/facts/123",
        "/api/nothing",
        "/api/v1/tasks/99999999",
    ],
)
def test_unknown_paths_and_malformed_ids_are_a_404_problem(caller, url):
    assert_problem(caller.client.get(url), 404, "not_found")


def test_unknown_paths_without_credentials_are_a_problem_too(client):
    assert_problem(client.get("/api/v1/nothing-here"), 404, "not_found")


def test_method_not_allowed_has_a_fixed_title(caller):
    cost = caller.client.post(
        "/api/v1/costs", {"provider": "p", "model": "m", "cost": "1"}, format="json"
    ).json()
    response = caller.client.delete(f"/api/v1/costs/{cost['id']}")
    body = assert_problem(response, 405, "method_not_allowed")
    assert body["title"] == "Method not allowed"
    assert body["detail"] == 'Method "DELETE" not allowed.'
    assert CostRecord.objects.count() == 1


def test_an_oversized_body_is_a_413_problem(caller, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    response = caller.client.post(
        "/api/v1/tasks", {"title": "t", "description": "x" * 2_000}, format="json"
    )
    body = assert_problem(response, 413, "request_too_large")
    assert body["detail"] == "The request body is larger than the server accepts (1000 bytes)."
    assert not Task.objects.exists()


def test_a_bug_is_a_500_problem_with_a_logged_correlation_id(caller, settings, caplog):
    settings.ROOT_URLCONF = "tests.synthorg.crashing_urls"
    with caplog.at_level(logging.ERROR, logger="synthorg.api"):
        response = caller.client.get("/api/v1/crash")
    body = assert_problem(response, 500, "internal_error")
    correlation_id = body["correlation_id"]
    assert len(correlation_id) == 32
    record = next(r for r in caplog.records if correlation_id in r.getMessage())
    assert record.exc_info[0] is ZeroDivisionError  # the traceback is logged


def test_a_bug_outside_the_api_is_left_to_django(caller, settings):
    settings.ROOT_URLCONF = "tests.synthorg.crashing_urls"
    with pytest.raises(ZeroDivisionError):
        caller.client.get("/crash")


def test_deciding_a_decided_write_request_keeps_status_409(caller, human_client):
    filed = caller.client.post(
        "/api/v1/org/write-requests",
        {"content": "Use UUIDs", "category": "adr", "justification": "consistency"},
        format="json",
    )
    assert filed.status_code == 201, filed.content
    url = f"/api/v1/org/write-requests/{filed.json()['id']}/decide"
    first = human_client.post(url, {"decision": "reject", "reason": "no"}, format="json")
    assert first.status_code == 200
    again = human_client.post(url, {"decision": "approve", "reason": ""}, format="json")
    body = assert_problem(again, 409, "write_request_already_decided")
    assert body["request_status"] == "rejected"


def test_the_root_is_a_landing_page(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/api/docs/"' in html and 'href="/admin/"' in html


def test_problem_bodies_are_valid_json(caller):
    response = post_raw(caller.client, "/api/v1/tasks", "{not json")
    assert json.loads(response.content)["code"] == "malformed_request"
