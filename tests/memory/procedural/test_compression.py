"""The GEMS two-tier experience compressor: raw traces (reports + captures) → strategic
learnings, min_compression_ratio honoured, with the OpenAI-wire stand-in and with no LLM."""

from __future__ import annotations

import json

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from memory.procedural import compression
from memory.procedural.models import CompressedExperience, CompressionRun, ExecutionReport
from memory.procedural.tasks import capture_execution_report
from persistence.services.companies import company_config_set
from synthorg.company_config import CompanyConfigError, parse_company_config
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import MembershipFactory
from tests.support.llm_slots import slot_held_elsewhere
from tests.support.openai_server import (
    FakeOpenAIServer,
    ScriptedResponse,
    chat_completion_payload,
    error_payload,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/experiences/compress"
LEARNING = "Give billing helm upgrades a 900s timeout with --atomic before retrying."


def _enable(company, **knobs) -> None:
    company_config_set(
        company=company,
        data={"memory": {"consolidation": {"experience_compressor": {"enabled": True, **knobs}}}},
    )


def _human(company, role="operator"):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = APIClient()
    client.force_login(membership.user)
    return client


@pytest.fixture
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


@pytest.fixture
def compressor_llm(settings):
    with FakeOpenAIServer(chat_reply=json.dumps({"learning": LEARNING})) as server:
        settings.SYNTHORG_LLM = {
            "BASE_URL": server.base_url,
            "API_KEY": "k",
            "MODEL": "fake-chat",
            "MAX_RETRIES": 0,
            "TIMEOUT": 5,
        }
        yield server


def _report(caller, body=FAILED_REPORT) -> str:
    response = caller.client.post("/api/v1/executions", body, format="json")
    assert response.status_code == 202
    return response.json()["id"]


def test_pure_ratio_and_extractive_learning():
    assert compression.compression_ratio("", "x") == 0.0
    assert compression.compression_ratio("a" * 100, "b" * 25) == 0.75
    assert compression.compression_ratio("a" * 10, "b" * 20) == 0.0
    report = {
        "task_type": "deploy",
        "outcome": "failed",
        "error_category": "timeout",
        "tool_calls": [{"name": "helm_upgrade", "status": "failed"}, {"name": "kubectl"}],
    }
    assert compression.extractive_learning(report, None) == (
        "A 'deploy' task can fail with timeout in helm_upgrade; plan for it before retrying."
    )
    assert compression.extractive_learning(report, {"discovery": " Use --atomic. "}) == (
        "Use --atomic."
    )
    with pytest.raises(compression.CompressionError):
        compression.parse_learning('{"learning": "  "}')
    assert compression.parse_learning('```json\n{"learning": "Do X."}\n```') == "Do X."


def test_disabled_by_default_409_and_nothing_written(company):
    response = _human(company).post(URL)
    assert response.status_code == 409
    assert response.json()["code"] == "experience_compressor_disabled"
    assert not CompressionRun.objects.exists()


def test_agents_and_viewers_cannot_run_it(company, caller):
    _enable(company)
    assert caller.client.post(URL).status_code == 403
    assert _human(company, "viewer").post(URL).status_code == 403
    assert not CompressionRun.objects.exists()


def test_with_the_stand_in_llm(company, caller, compressor_llm, settings):
    _enable(company, model="compressor-model", temperature=0.1, max_tokens=123)
    report_id = _report(caller)
    response = _human(company).post(URL)
    assert response.status_code == 201, response.json()
    run = response.json()
    assert (run["method"], run["reports_seen"], run["compressed"]) == ("llm", 1, 1)
    assert (run["skipped_below_ratio"], run["failed"], run["skipped"]) == (0, 0, {})
    experience = CompressedExperience.objects.get()
    assert (experience.content, str(experience.report_id), experience.method) == (
        LEARNING,
        report_id,
        "llm",
    )
    assert experience.compressor_version == compression.COMPRESSOR_VERSION
    report = ExecutionReport.objects.values().get(pk=report_id)
    raw = compression.raw_trace(report, None)
    assert experience.raw_chars == len(raw)
    assert experience.compression_ratio == compression.compression_ratio(raw, LEARNING)
    [call] = compressor_llm.requests_to("/v1/chat/completions")
    body = call.json()
    assert (body["model"], body["temperature"], body["max_tokens"]) == (
        "compressor-model",
        0.1,
        123,
    )
    assert "helm upgrade timed out after 300s" in body["messages"][1]["content"]
    # A second run finds nothing left to compress.
    again = _human(company).post(URL).json()
    assert (again["reports_seen"], again["compressed"]) == (0, 0)
    listed = caller.client.get("/api/v1/experiences").json()
    assert [row["content"] for row in listed] == [LEARNING]


def test_below_min_compression_ratio_is_skipped_and_recorded(company, caller, settings):
    long_answer = "Retry. " * 400  # longer than the trace: ratio 0
    with FakeOpenAIServer(chat_reply=json.dumps({"learning": long_answer})) as server:
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        _enable(company, min_compression_ratio=0.3)
        report_id = _report(caller)
        run = _human(company).post(URL).json()
    assert (run["compressed"], run["skipped_below_ratio"]) == (0, 1)
    assert run["skipped"] == {report_id: 0.0}
    assert run["min_compression_ratio"] == 0.3
    assert not CompressedExperience.objects.exists()


def test_min_compression_ratio_zero_keeps_everything(company, caller, settings):
    with FakeOpenAIServer(chat_reply=json.dumps({"learning": "Retry. " * 400})) as server:
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        _enable(company, min_compression_ratio=0.0)
        _report(caller)
        run = _human(company).post(URL).json()
    assert (run["compressed"], run["skipped_below_ratio"]) == (1, 0)
    assert CompressedExperience.objects.get().compression_ratio == 0.0


def test_llm_error_leaves_the_report_for_the_next_run(company, caller, settings):
    with FakeOpenAIServer() as server:
        server.enqueue(
            "/v1/chat/completions", ScriptedResponse(status=500, json=error_payload("down"))
        )
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        _enable(company)
        report_id = _report(caller)
        run = _human(company).post(URL).json()
        assert (run["method"], run["failed"], run["compressed"]) == ("llm", 1, 0)
        assert list(run["errors"]) == [report_id]
        assert not CompressedExperience.objects.exists()
        server.chat_reply = json.dumps({"learning": LEARNING})
        run = _human(company).post(URL).json()
    assert (run["failed"], run["compressed"]) == (0, 1)


def test_without_an_llm_the_learning_is_extractive(company, caller, no_llm):
    _enable(company)
    report_id = _report(caller)
    capture_execution_report(report_id)  # no LLM: a rule lesson
    run = _human(company).post(URL).json()
    assert (run["method"], run["compressed"]) == ("extractive", 1)
    experience = CompressedExperience.objects.get()
    lesson = ExecutionReport.objects.get(pk=report_id).lessons.get()
    assert experience.content == lesson.discovery  # the capture's lesson, already a summary
    assert (experience.method, experience.model) == ("extractive", "")


def test_config_shape_is_the_seeds():
    config = parse_company_config({}).memory.consolidation.experience_compressor
    assert config.model_dump() == {
        "enabled": False,
        "model": None,
        "temperature": 0.2,
        "max_tokens": 400,
        "min_compression_ratio": 0.5,
    }
    for bad in (
        {"min_compression_ratio": 1.5},
        {"model": " "},
        {"unknown": 1},
    ):
        with pytest.raises(CompanyConfigError):
            parse_company_config({"memory": {"consolidation": {"experience_compressor": bad}}})


def test_busy_llm_slots_answer_503_and_nothing_runs(company, caller, compressor_llm):
    _enable(company)
    _report(caller)
    with slot_held_elsewhere(company.pk):
        response = _human(company).post(URL)
    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "15"
    assert response.json() == {
        "type": "https://synthorg.dev/problems/llm_slots_busy",
        "title": "Service unavailable",
        "status": 503,
        "code": "llm_slots_busy",
        "detail": "Every LLM slot of the company is busy (SYNTHORG_LLM_COMPANY_CONCURRENCY=1): "
        "nothing was run; try again in 15 s.",
        "errors": [],
        "retry_after": 15,
    }
    assert not CompressionRun.objects.exists()
    assert not CompressedExperience.objects.exists()
    assert compressor_llm.requests_to("/v1/chat/completions") == []
    # the slot free again: the same request runs
    assert _human(company).post(URL).json()["compressed"] == 1


def test_without_an_llm_no_slot_is_needed(company, caller, no_llm):
    _enable(company)
    _report(caller)
    with slot_held_elsewhere(company.pk):
        response = _human(company).post(URL)
    assert response.status_code == 201
    assert (response.json()["method"], response.json()["compressed"]) == ("extractive", 1)


def _hanging(server, *, first_answers: bool, budget: float) -> dict:
    if first_answers:
        answer = chat_completion_payload(json.dumps({"learning": LEARNING}))
        server.enqueue("/v1/chat/completions", ScriptedResponse(json=answer))
    server.enqueue("/v1/chat/completions", ScriptedResponse(delay=3600))  # never answers
    settings = {
        "BASE_URL": server.base_url,
        "MODEL": "m",
        "MAX_RETRIES": 0,
        # per attempt and per call beyond the budget: only the budget ends the hang
        "TIMEOUT": 3 * budget,
        "TOTAL_TIMEOUT": 3 * budget,
        "REQUEST_BUDGET": budget,
    }
    return settings


def test_a_hanging_llm_is_cut_at_the_request_budget_and_the_rest_deferred(
    company, caller, settings
):
    with FakeOpenAIServer() as server:
        settings.SYNTHORG_LLM = _hanging(server, first_answers=False, budget=0.5)
        _enable(company)
        reports = [_report(caller), _report(caller)]
        response = _human(company).post(URL)
        asked = len(server.requests_to("/v1/chat/completions"))
    assert response.status_code == 201, response.json()
    run = response.json()
    assert (run["method"], run["reports_seen"], run["compressed"], run["failed"]) == (
        "llm",
        0,
        0,
        0,
    )
    assert (run["deferred"], run["degraded"], run["errors"]) == (
        2,
        ["llm_budget_exceeded"],
        {},
    )
    assert asked == 1  # cut in the first call; no call started after the budget
    stored = CompressionRun.objects.values("deferred", "degraded", "failed").get()
    assert stored == {"deferred": 2, "degraded": ["llm_budget_exceeded"], "failed": 0}
    assert not CompressedExperience.objects.exists()
    assert ExecutionReport.objects.filter(pk__in=reports, compressed__isnull=True).count() == 2


def test_what_was_compressed_before_the_budget_ran_out_is_kept(company, caller, settings):
    with FakeOpenAIServer() as server:
        settings.SYNTHORG_LLM = _hanging(server, first_answers=True, budget=5.0)
        _enable(company)
        older, newer = _report(caller), _report(caller)
        run = _human(company).post(URL).json()
    assert (run["reports_seen"], run["compressed"], run["deferred"], run["degraded"]) == (
        1,
        1,
        1,
        ["llm_budget_exceeded"],
    )
    # newest first: the newer report was compressed, the older one waits for the next run
    assert [str(e.report_id) for e in CompressedExperience.objects.all()] == [newer]
    assert not CompressedExperience.objects.filter(report_id=older).exists()


def test_a_deferred_run_must_say_degraded(company):
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        CompressionRun.objects.create(
            company=company,
            trigger="manual",
            method="llm",
            min_compression_ratio=0.3,
            deferred=1,
            started_at=now,
            finished_at=now,
        )


# --- issue 33: the learnings reach search and context; the compressor runs on its schedule --


def _compressor_schedule(company):
    from django_q.models import Schedule

    from memory.procedural.schedules import compressor_schedule_name
    from synthorg.schedules import SCHEDULE_PREFIX

    return Schedule.objects.filter(
        name=SCHEDULE_PREFIX + compressor_schedule_name(company.pk)
    ).first()


def test_learnings_are_searched_and_injected_as_procedural_memories(
    company, caller, peer, compressor_llm
):
    from memory.core.models.memory import Memory

    _enable(company)
    report_id = _report(caller)
    run = _human(company).post(URL).json()
    assert run["compressed"] == 1
    experience = CompressedExperience.objects.get()
    memory = Memory.objects.get(pk=experience.memory_id)
    assert (memory.agent_id, memory.category, memory.content, memory.is_shared) == (
        caller.agent.pk,
        "procedural",
        LEARNING,
        False,
    )
    assert (memory.level, memory.source, memory.tags) == (
        "persistent",
        "experience_compressor",
        ["compressed-experience", "non-inferable"],
    )
    assert report_id in memory.context

    search = caller.client.post(
        "/api/v1/memories/search", {"query": "billing helm upgrade timeout"}, format="json"
    )
    assert str(memory.pk) in [hit["memory"]["id"] for hit in search.json()["results"]]
    context = caller.client.post(
        "/api/v1/memories/context",
        {"query": "billing helm upgrade timeout", "token_budget": 2000, "include_org": False},
        format="json",
    )
    assert context.status_code == 200, context.json()
    assert str(memory.pk) in [entry["id"] for entry in context.json()["included"]]
    assert LEARNING in "\n".join(m["content"] for m in context.json()["messages"])
    # private to the agent the report came from
    peer_search = peer.client.post(
        "/api/v1/memories/search", {"query": "billing helm upgrade timeout"}, format="json"
    )
    assert str(memory.pk) not in [hit["memory"]["id"] for hit in peer_search.json()["results"]]


def test_the_compressor_is_scheduled_at_the_consolidation_interval(
    company, django_capture_on_commit_callbacks
):
    from django_q.models import Schedule

    from synthorg.schedules import LLM_CLUSTER, sync_schedules

    sync_schedules()
    assert _compressor_schedule(company) is None  # off by default: no schedule
    with django_capture_on_commit_callbacks(execute=True):
        _enable(company)
    row = _compressor_schedule(company)
    assert (row.func, row.schedule_type, row.kwargs, row.cluster) == (
        "memory.procedural.tasks.run_experience_compression",
        Schedule.DAILY,
        repr({"company_id": company.pk}),
        LLM_CLUSTER,
    )
    with django_capture_on_commit_callbacks(execute=True):
        company_config_set(
            company=company,
            data={
                "memory": {
                    "consolidation": {
                        "interval": "hourly",
                        "experience_compressor": {"enabled": True},
                    }
                }
            },
        )
    assert _compressor_schedule(company).schedule_type == Schedule.HOURLY
    with django_capture_on_commit_callbacks(execute=True):
        company_config_set(
            company=company,
            data={
                "memory": {
                    "consolidation": {
                        "interval": "never",
                        "experience_compressor": {"enabled": True},
                    }
                }
            },
        )
    assert _compressor_schedule(company) is None


def test_the_scheduled_task_compresses_and_stores_the_learning(company, caller, compressor_llm):
    from memory.core.models.memory import Memory
    from memory.procedural.services.compression import COMPRESSOR_DISABLED
    from memory.procedural.tasks import run_experience_compression

    report_id = _report(caller)
    # turned off since it was scheduled: nothing runs
    assert run_experience_compression(company.pk) == {"skipped": COMPRESSOR_DISABLED}
    assert not CompressionRun.objects.exists()

    _enable(company)
    outcome = run_experience_compression(company.pk)
    run = CompressionRun.objects.get()
    assert outcome == {"run": run.pk, "compressed": 1, "failed": 0}
    assert (run.trigger, run.method) == ("schedule", "llm")
    experience = CompressedExperience.objects.get(report_id=report_id)
    assert Memory.objects.get(pk=experience.memory_id).content == LEARNING
    assert run_experience_compression(10**9) is None  # an unknown company


def test_a_learning_from_a_report_for_an_end_user_is_about_them_and_erased_with_them(
    company, caller, compressor_llm
):
    """A report that served an end user (``subject``) gives a learning stored with that
    subject: it is found by their subject filter and gone after their erasure, while the
    learning of another report stays."""
    from memory.core.models.memory import Memory
    from persistence.services.erasure import subject_erase

    _enable(company)
    _report(caller, {**FAILED_REPORT, "subject": "user-42"})
    run = _human(company).post(URL).json()
    assert run["compressed"] == 1
    memory = Memory.objects.get(pk=CompressedExperience.objects.get().memory_id)
    assert memory.subject == "user-42"
    receipt = subject_erase(company=company, subject="user-42")
    assert receipt.total >= 1
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not Memory.objects.filter(subject="user-42").exists()
