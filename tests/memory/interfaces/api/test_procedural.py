"""POST/GET /api/v1/executions: validation, redaction before storage, isolation."""

from __future__ import annotations

import copy
import uuid

import pytest
from django.db import connection, transaction
from django.db.utils import InternalError, ProgrammingError
from django.utils.dateparse import parse_datetime

from memory.procedural.models import ExecutionCapture, ExecutionReport
from memory.procedural.services.reports import LOST_TASK_GRACE
from persistence.models import AuditEntry
from tests.conftest import make_agent_caller
from tests.memory.procedural.conftest import FAILED_REPORT, set_procedural
from tests.persistence.factories import CompanyFactory, MembershipFactory, TaskFactory

URL = "/api/v1/executions"
pytestmark = pytest.mark.django_db


def post(caller, body):
    return caller.client.post(URL, body, format="json")


def test_failed_report_is_stored_and_queued(caller):
    response = post(caller, FAILED_REPORT)
    assert response.status_code == 202, response.json()
    body = response.json()
    assert set(body) == {"id", "capture"} and body["capture"] == "queued"
    report = ExecutionReport.objects.get(pk=body["id"])
    assert report.agent == caller.agent and report.company == caller.company
    assert (report.task_title, report.task_type, report.outcome) == (
        "Deploy billing service",
        "deploy",
        "failed",
    )
    assert (report.error_category, report.error_message) == (
        "timeout",
        "helm upgrade timed out after 300s",
    )
    assert report.tool_calls == FAILED_REPORT["tool_calls"]
    assert (report.retry_count, report.turn_count, report.duration_ms) == (2, 9, 312000)
    assert report.quality_score is None and report.redactions == {}
    assert report.capture.status == "queued"
    audit = AuditEntry.objects.get(action_type="execution_report.submitted")
    assert audit.actor_agent == caller.agent and audit.target_id == body["id"]


def test_detail_shows_capture_and_exact_payload(caller):
    report_id = post(caller, FAILED_REPORT).json()["id"]
    response = caller.client.get(f"{URL}/{report_id}")
    assert response.status_code == 200
    body = response.json()
    created_at = body.pop("created_at")
    assert created_at.endswith("Z") or "+" in created_at
    assert body == {
        "id": report_id,
        "agent_id": caller.agent.pk,
        "subject": None,
        "task_id": None,
        "task_title": "Deploy billing service",
        "task_type": "deploy",
        "task_description": "",
        "outcome": "failed",
        "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
        "tool_calls": FAILED_REPORT["tool_calls"],
        "retry_count": 2,
        "turn_count": 9,
        "quality_score": None,
        "duration_ms": 312000,
        "recovery": "Retried twice with the same timeout.",
        "redactions": {},
        "capture_status": "queued",
        "capture_reason": "",
        "capture_strategy": "",
        "capture_method": "",
        "capture_attempts": 0,
        # due for the retry dispatcher should its own task be lost (LOST_TASK_GRACE)
        "capture_next_attempt_at": body["capture_next_attempt_at"],
        "memory_id": None,
    }
    capture = ExecutionCapture.objects.get(report_id=report_id)
    assert parse_datetime(body["capture_next_attempt_at"]) == capture.created_at + LOST_TASK_GRACE


@pytest.mark.parametrize(
    ("capture", "outcome", "quality", "expected"),
    [
        ("failure", "succeeded", 9.5, "not_applicable"),
        ("failure", "partial", None, "queued"),
        ("success", "failed", None, "not_applicable"),
        ("success", "succeeded", None, "not_applicable"),
        ("success", "succeeded", 7.9, "not_applicable"),
        ("success", "succeeded", 8.0, "queued"),
        ("hybrid", "succeeded", 9.0, "queued"),
        ("hybrid", "failed", None, "queued"),
    ],
)
def test_capture_status_at_submit(caller, capture, outcome, quality, expected):
    set_procedural(caller.company, capture=capture)
    body = {"outcome": outcome, "task_title": "t"}
    if quality is not None:
        body["quality_score"] = quality
    response = post(caller, body)
    assert response.status_code == 202
    assert response.json()["capture"] == expected
    assert ExecutionCapture.objects.get(report_id=response.json()["id"]).status == expected


def test_disabled_company(caller):
    set_procedural(caller.company, enabled=False)
    assert post(caller, FAILED_REPORT).json()["capture"] == "disabled"


def test_every_free_text_field_is_redacted_before_storage(caller):
    secret = "sk-" + "A1b2C3d4" * 4
    body = {
        "task_title": f"Email ana@example.com about {secret}",
        "task_type": "notify ops@corp.io",
        "task_description": "Use postgres://svc:pa55word@db:5432/x",
        "outcome": "failed",
        "error": {
            "category": "auth AKIAIOSFODNN7EXAMPLE",
            "message": "401 with Authorization: Bearer abcdefgh12345678",
        },
        "tool_calls": [{"name": "send", "status": "failed", "error": "password=hunter22"}],
        "recovery": f"Tried again with {secret}",
    }
    report_id = post(caller, body).json()["id"]
    report = ExecutionReport.objects.get(pk=report_id)
    stored = " ".join(
        [
            report.task_title,
            report.task_type,
            report.task_description,
            report.error_category,
            report.error_message,
            str(report.tool_calls),
            report.recovery,
        ]
    )
    for leaked in (
        "ana@example.com",
        "ops@corp.io",
        "pa55word",
        "AKIAIOSFODNN7EXAMPLE",
        "abcdefgh12345678",
        "hunter22",
        secret,
    ):
        assert leaked not in stored
    assert report.task_title == "Email [REDACTED:email] about [REDACTED:sk_key]"
    assert report.error_message == "401 with Authorization: Bearer [REDACTED:bearer_token]"
    assert report.tool_calls[0]["error"] == "password=[REDACTED:credential_assignment]"
    assert report.redactions == {
        "email": 2,
        "sk_key": 2,
        "url_password": 1,
        "aws_access_key_id": 1,
        "bearer_token": 1,
        "credential_assignment": 1,
    }


def test_company_redaction_config_applies(caller):
    from persistence.services.companies import company_config_set

    company_config_set(
        company=caller.company,
        data={"memory": {"redaction": {"extra_patterns": {"ticket": r"INC-\d+"}}}},
    )
    report_id = post(caller, {"outcome": "failed", "task_title": "fix INC-991"}).json()["id"]
    assert ExecutionReport.objects.get(pk=report_id).task_title == "fix [REDACTED:ticket]"


def _bad(**changes):
    body = copy.deepcopy(FAILED_REPORT)
    for key, value in changes.items():
        if value is ...:
            body.pop(key)
        else:
            body[key] = value
    return body


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        (_bad(outcome=...), "outcome", "missing"),
        (_bad(outcome="crashed"), "outcome", "enum"),
        (_bad(surprise=1), "surprise", "unknown_field"),
        (_bad(task_id=0), "task_id", "greater_than_equal"),
        (_bad(task_title="x" * 501), "task_title", "string_too_long"),
        (_bad(task_type="x" * 101), "task_type", "string_too_long"),
        (_bad(task_description="x" * 10_001), "task_description", "string_too_long"),
        (_bad(error={"message": "no category"}), "error.category", "missing"),
        (_bad(error={"category": "c", "extra": 1}), "error.extra", "unknown_field"),
        (_bad(error={"category": "c", "message": "m" * 4001}), "error.message", "string_too_long"),
        (_bad(tool_calls=[{"status": "failed"}]), "tool_calls.0.name", "missing"),
        (_bad(tool_calls=[{"name": "x", "status": "exploded"}]), "tool_calls.0.status", "enum"),
        (
            _bad(tool_calls=[{"name": "x", "status": "failed", "duration_ms": -1}]),
            "tool_calls.0.duration_ms",
            "greater_than_equal",
        ),
        (_bad(tool_calls=[{"name": "x", "status": "failed"}] * 201), "tool_calls", "too_long"),
        (_bad(tool_calls="helm"), "tool_calls", "list_type"),
        (_bad(retry_count=-1), "retry_count", "greater_than_equal"),
        (_bad(turn_count="many"), "turn_count", "int_type"),
        (_bad(quality_score=10.5), "quality_score", "less_than_equal"),
        (_bad(quality_score=-0.1), "quality_score", "greater_than_equal"),
        (_bad(duration_ms=-5), "duration_ms", "greater_than_equal"),
        (_bad(recovery="r" * 4001), "recovery", "string_too_long"),
        (_bad(task_id=2**63), "task_id", "less_than_equal"),
        (_bad(quality_score="high"), "quality_score", "float_type"),
        (_bad(error="boom"), "error", "model_type"),
    ],
)
def test_validation_names_the_field_and_stores_nothing(caller, body, field, code):
    response = post(caller, body)
    assert response.status_code == 400, response.json()
    problem = response.json()
    assert response["Content-Type"].startswith("application/problem+json")
    assert problem["code"] == "validation_error"
    assert problem["errors"][0]["field"] == field
    assert problem["errors"][0]["code"] == code
    assert problem["detail"].startswith(f"{field}: ")
    assert ExecutionReport.objects.count() == 0
    assert ExecutionCapture.objects.count() == 0


def test_body_must_be_an_object(caller):
    response = post(caller, [FAILED_REPORT])
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert ExecutionReport.objects.count() == 0


def test_task_of_own_company_is_linked_and_titles_default(caller):
    task = TaskFactory(company=caller.company, title="Rotate certificates")
    body = {"task_id": task.pk, "outcome": "partial"}
    report = ExecutionReport.objects.get(pk=post(caller, body).json()["id"])
    assert report.task_id == task.pk and report.task_title == "Rotate certificates"


def test_task_of_another_company_is_not_found(caller):
    foreign = TaskFactory(company=CompanyFactory())
    response = post(caller, _bad(task_id=foreign.pk))
    assert response.status_code == 404
    assert response.json()["code"] == "task_not_found"
    assert response.json()["errors"][0]["field"] == "task_id"
    assert ExecutionReport.objects.count() == 0
    assert not AuditEntry.objects.filter(action_type="execution_report.submitted").exists()


def test_humans_cannot_submit(human_client):
    response = human_client.post(URL, FAILED_REPORT, format="json")
    assert response.status_code == 403
    assert ExecutionReport.objects.count() == 0


def test_unauthenticated(client):
    assert client.post(URL, FAILED_REPORT, content_type="application/json").status_code == 401


def test_listing_is_isolated_between_agents_and_companies(caller, peer, outsider):
    mine = post(caller, FAILED_REPORT).json()["id"]
    peers = post(peer, _bad(outcome="partial")).json()["id"]
    theirs = post(outsider, FAILED_REPORT).json()["id"]

    ids = [r["id"] for r in caller.client.get(URL).json()["results"]]
    assert ids == [mine]
    assert caller.client.get(f"{URL}/{peers}").status_code == 404
    assert caller.client.get(f"{URL}/{theirs}").json()["code"] == "execution_report_not_found"
    assert caller.client.get(f"{URL}/{uuid.uuid4()}").status_code == 404
    # the agent filter cannot widen an agent's view
    assert caller.client.get(URL, {"agent": peer.agent.pk}).json()["results"] == []


def test_humans_see_the_company_and_filter(caller, peer, outsider, human_client):
    failed = post(caller, FAILED_REPORT).json()["id"]
    partial = post(peer, _bad(outcome="partial")).json()["id"]
    post(outsider, FAILED_REPORT)

    def ids(**params):
        response = human_client.get(URL, params)
        assert response.status_code == 200
        return [r["id"] for r in response.json()["results"]]

    assert ids() == [partial, failed]
    assert ids(outcome="failed") == [failed]
    assert ids(agent=peer.agent.pk) == [partial]
    assert ids(capture_status="queued") == [partial, failed]
    assert ids(capture_status="captured") == []
    assert ids(**{"from": "2100-01-01T00:00:00Z"}) == []
    assert ids(**{"to": "2100-01-01T00:00:00Z"}) == [partial, failed]
    assert human_client.get(URL, {"outcome": "nope"}).status_code == 400


def test_list_is_cursor_paginated(caller):
    for _ in range(3):
        post(caller, FAILED_REPORT)
    page = caller.client.get(URL, {"page_size": 2}).json()
    assert len(page["results"]) == 2 and page["next"]
    rest = caller.client.get(page["next"]).json()
    assert len(rest["results"]) == 1 and rest["next"] is None


def test_list_query_count_is_constant(caller, django_assert_max_num_queries):
    for _ in range(5):
        post(caller, FAILED_REPORT)
    with django_assert_max_num_queries(6):
        assert len(caller.client.get(URL).json()["results"]) == 5


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE procedural_executionreport SET outcome = 'succeeded'",
        "DELETE FROM procedural_executionreport",
    ],
)
def test_reports_are_append_only_in_the_database(caller, sql):
    post(caller, FAILED_REPORT)
    with (
        pytest.raises((InternalError, ProgrammingError), match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert ExecutionReport.objects.get().outcome == "failed"


def test_viewer_member_reads_but_cannot_post(company):
    from rest_framework.test import APIClient

    make_agent_caller(company=company)
    membership = MembershipFactory(company=company, role="viewer")
    client = APIClient()
    client.force_login(membership.user)
    assert client.get(URL).status_code == 200
    assert client.post(URL, FAILED_REPORT, format="json").status_code == 403


def test_window_selector_spans_agents_not_companies(caller, peer, outsider):
    from datetime import timedelta

    from django.utils import timezone

    from memory.procedural.selectors import execution_reports_in_window

    first = post(caller, FAILED_REPORT).json()["id"]
    second = post(peer, _bad(outcome="succeeded")).json()["id"]
    post(outsider, FAILED_REPORT)
    now = timezone.now()
    ids = [str(r.pk) for r in execution_reports_in_window(company=caller.company)]
    assert ids == [first, second]
    failed = execution_reports_in_window(company=caller.company, outcomes=["failed"])
    assert [str(r.pk) for r in failed] == [first]
    assert not execution_reports_in_window(company=caller.company, since=now + timedelta(1))
    assert not execution_reports_in_window(company=caller.company, until=now - timedelta(1))


def test_deleting_the_task_keeps_the_report(caller, human_client):
    task = TaskFactory(company=caller.company, title="Rotate certificates")
    report_id = post(caller, {"task_id": task.pk, "outcome": "failed"}).json()["id"]
    assert human_client.delete(f"/api/v1/tasks/{task.pk}").status_code == 204
    report = ExecutionReport.objects.get(pk=report_id)
    assert (report.task_id, report.task_title) == (task.pk, "Rotate certificates")
    assert caller.client.get(f"{URL}/{report_id}").json()["task_id"] == task.pk


@pytest.mark.parametrize(
    "body",
    [
        _bad(recovery="nul \x00 byte"),
        _bad(error={"category": "c\x00"}),
        _bad(tool_calls=[{"name": "a\x00", "status": "failed"}]),
    ],
)
def test_nul_characters_are_refused_and_nothing_is_stored(caller, body):
    response = post(caller, body)
    assert response.status_code == 400
    assert ExecutionReport.objects.count() == 0
