"""The capture pipeline end to end: report → strategy → proposer (a real local HTTP server
speaking the OpenAI wire format) → PROCEDURAL memory, and every degrade path."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest

from memory.core.models.memory import Memory
from memory.procedural.models import ExecutionCapture, ExecutionReport, ProceduralLesson
from memory.procedural.proposer import FAILURE_SYSTEM_PROMPT, SUCCESS_SYSTEM_PROMPT
from memory.procedural.services.capture import (
    CAPTURE_JOB,
    RULE_STANDS_IN,
    execution_report_capture,
)
from memory.procedural.services.reports import LOST_TASK_GRACE
from memory.procedural.tasks import capture_execution_report
from persistence.models import CostRecord
from synthorg.jobs.dispatch import COMPANY_TASK, jobs_dispatch, jobs_run_company
from tests.memory.procedural.conftest import (
    FAILED_REPORT,
    PROPOSAL,
    set_procedural,
    stored_rationale,
)
from tests.support.openai_server import (
    ScriptedResponse,
    chat_completion_payload,
    error_payload,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/executions"


def submit(caller, body=FAILED_REPORT) -> str:
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def reply(server, content, **kw):
    server.enqueue(
        server.CHAT_COMPLETIONS, ScriptedResponse(json=chat_completion_payload(content, **kw))
    )


def capture_of(report_id) -> ExecutionCapture:
    return ExecutionCapture.objects.get(report_id=report_id)


def test_failure_becomes_a_three_tier_procedural_memory(caller, llm_server):
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"

    capture = capture_of(report_id)
    memory = Memory.objects.get(pk=capture.memory_id)
    assert memory.agent == caller.agent and memory.category == "procedural"
    assert memory.content == PROPOSAL["discovery"]
    assert memory.level == "persistent" and memory.scope == "agent"
    assert memory.tags == ["non-inferable", "helm", "deploy"]
    assert memory.source == f"execution-report:{report_id}"
    assert memory.confidence == 0.9
    lesson = ProceduralLesson.objects.get(memory=memory)
    assert str(lesson.report_id) == report_id and lesson.origin == "failure"
    # the LLM words the lesson; the evidence sentence is computed from the report
    assert (lesson.condition, lesson.action, lesson.rationale) == (
        PROPOSAL["condition"],
        PROPOSAL["action"],
        stored_rationale(lesson.report),
    )
    assert lesson.advice == {
        "situation": {
            "task_type": "deploy",
            "error_category": "timeout",
            "tool": "helm_upgrade",
            "outcome": "failed",
        },
        "directives": [
            {
                "stance": "avoid",
                "action": "Retried twice with the same timeout.",
                "kind": "recovery",
            },
            {
                "stance": "do",
                "action": "change `helm_upgrade`'s inputs or escalate",
                "kind": "escalate",
            },
        ],
    }
    assert lesson.execution_steps == PROPOSAL["execution_steps"]
    assert lesson.skill_name == f"helm-upgrade-timeouts-{str(memory.pk)[:8]}"
    assert (capture.strategy, capture.confidence, capture.reason) == ("failure", 0.9, "")

    body = caller.client.get(f"{URL}/{report_id}").json()
    assert (body["capture_status"], body["memory_id"]) == ("captured", str(memory.pk))

    [request] = llm_server.requests_to(llm_server.CHAT_COMPLETIONS)
    sent = request.json()
    assert sent["messages"][0] == {"role": "system", "content": FAILURE_SYSTEM_PROMPT}
    assert "helm upgrade timed out after 300s" in sent["messages"][1]["content"]
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("fake-chat", 0.3, 1500)
    cost = CostRecord.objects.get()
    assert (cost.agent, cost.model, cost.input_tokens, cost.output_tokens) == (
        caller.agent,
        "fake-chat",
        10,
        5,
    )


def test_proposer_never_sees_secrets(caller, llm_server):
    body = {**FAILED_REPORT, "error": {"category": "auth", "message": "key sk-" + "Z" * 24}}
    capture_execution_report(submit(caller, body))
    prompt = llm_server.requests_to(llm_server.CHAT_COMPLETIONS)[0].json()["messages"][1]
    assert "Z" * 24 not in prompt["content"] and "[REDACTED:sk_key]" in prompt["content"]


def test_configured_model_and_sampling_are_sent(caller, llm_server):
    set_procedural(caller.company, model="lesson-writer", temperature=0.1, max_tokens=700)
    capture_execution_report(submit(caller))
    sent = llm_server.requests_to(llm_server.CHAT_COMPLETIONS)[0].json()
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("lesson-writer", 0.1, 700)


def test_success_path_uses_its_own_prompt_and_tag(caller, llm_server):
    set_procedural(caller.company, capture="hybrid")
    reply(
        llm_server,
        _proposal(
            discovery="Deploys that scored well checked the rollout before closing the task.",
            condition="Closing a deploy task.",
            action="Check the rollout status before closing the deploy.",
            rationale="The deploy scored well when the rollout was checked.",
            execution_steps=["Check the rollout", "Close the task"],
        ),
    )
    report_id = submit(
        caller, {"outcome": "succeeded", "task_title": "Deploy", "quality_score": 9.5}
    )
    assert capture_execution_report(report_id) == "captured"
    sent = llm_server.requests_to(llm_server.CHAT_COMPLETIONS)[0].json()
    assert sent["messages"][0]["content"] == SUCCESS_SYSTEM_PROMPT
    payload = json.loads(sent["messages"][1]["content"].split("\n", 1)[1])
    assert set(payload) == {
        "task_title",
        "task_type",
        "task_description",
        "quality_score",
        "tool_calls",
        "turn_count",
        "duration_ms",
    }
    memory = Memory.objects.get(pk=capture_of(report_id).memory_id)
    assert memory.tags == ["non-inferable", "success-derived", "helm", "deploy"]
    assert memory.lesson.origin == "success"


def test_success_below_the_agents_percentile_is_not_applicable(caller, peer, llm_server):
    set_procedural(caller.company, capture="success")
    for score in (9.0, 9.5, 9.8, 10.0):
        capture_execution_report(submit(caller, {"outcome": "succeeded", "quality_score": score}))
    # a peer's scores do not count towards the caller's percentile
    submit(peer, {"outcome": "succeeded", "quality_score": 8.0})
    calls_before = len(llm_server.requests_to(llm_server.CHAT_COMPLETIONS))
    report_id = submit(caller, {"outcome": "succeeded", "quality_score": 9.0})
    assert capture_execution_report(report_id) == "not_applicable"
    assert capture_of(report_id).reason == "quality_score 9 below the agent's p75 (9.8)"
    assert len(llm_server.requests_to(llm_server.CHAT_COMPLETIONS)) == calls_before


@pytest.mark.parametrize(
    ("response", "reason_start"),
    [
        (ScriptedResponse(status=500, json=error_payload("boom")), "llm_error: LLMTransientError"),
        (ScriptedResponse(status=401, json=error_payload("bad key")), "llm_error: LLMRequestError"),
        (ScriptedResponse(status=200, body=b"<html>"), "llm_error: LLMResponseError"),
    ],
)
def test_llm_errors_leave_the_rule_lesson_and_retry(
    caller, llm_server, caplog, response, reason_start
):
    llm_server.enqueue(llm_server.CHAT_COMPLETIONS, response)
    report_id = submit(caller)
    with caplog.at_level(logging.WARNING):
        assert capture_execution_report(report_id) == "captured"
    capture = capture_of(report_id)
    assert capture.reason.startswith(reason_start)
    assert capture.reason.endswith(f"({RULE_STANDS_IN})")
    assert_rule_lesson_stands_in(capture)
    assert f"report {report_id} failed" in caplog.text
    body = caller.client.get(f"{URL}/{report_id}").json()
    assert (body["capture_status"], body["capture_method"]) == ("captured", "rule")
    assert body["capture_reason"].startswith("llm_error")


def assert_rule_lesson_stands_in(capture) -> None:
    """The LLM's lesson could not be had: the rule lesson is stored and the LLM is asked
    again later (never worse than no LLM)."""
    assert capture.status == "captured" and capture.method == "rule"
    assert capture.next_attempt_at is not None and capture.next_attempt_at > capture.updated_at
    [lesson] = ProceduralLesson.objects.all()
    assert lesson.memory_id == capture.memory_id and lesson.method == "rule"
    assert lesson.discovery == Memory.objects.get(pk=capture.memory_id).content
    assert lesson.advice["situation"]["tool"] == "helm_upgrade"


def _proposal(**changes):
    return json.dumps({**PROPOSAL, **changes})


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            "Sure! Here is a lesson: be careful.",
            "invalid JSON from proposer: the reply contains no JSON object",
        ),
        ("[1, 2]", "invalid JSON from proposer: the reply contains no JSON object"),
        (
            "<think>The report shows a timeout.",
            "invalid JSON from proposer: the reply is a reasoning block with no answer after it",
        ),
        (
            _proposal(action="use \u0000 here"),
            "invalid proposal: action: must not contain NUL characters",
        ),
        (
            _proposal(execution_steps=["ok", "bad \u0000"]),
            "invalid proposal: execution_steps: must not contain NUL characters",
        ),
        (
            _proposal(discovery="d" * 601),
            "invalid proposal: discovery: String should have at most 600 characters",
        ),
        (
            _proposal(condition="c" * 2001),
            "invalid proposal: condition: String should have at most 2000 characters",
        ),
        (_proposal(action=""), "invalid proposal: action: String should have at least 1 character"),
        (
            _proposal(rationale="r" * 2001),
            "invalid proposal: rationale: String should have at most 2000 characters",
        ),
        (
            _proposal(execution_steps=["s"] * 51),
            "invalid proposal: execution_steps: "
            "List should have at most 50 items after validation, not 51",
        ),
        (
            _proposal(execution_steps=[]),
            "invalid proposal: execution_steps: "
            "List should have at least 1 item after validation, not 0",
        ),
        (
            _proposal(confidence=1.5),
            "invalid proposal: confidence: Input should be less than or equal to 1",
        ),
        (
            _proposal(confidence="high"),
            "invalid proposal: confidence: Input should be a valid number, "
            "unable to parse string as a number",
        ),
        (
            _proposal(tags=[f"t{i}" for i in range(21)]),
            "invalid proposal: tags: List should have at most 20 items after validation, not 21",
        ),
        (
            _proposal(scope="galaxy"),
            "invalid proposal: scope: Input should be 'agent', 'role', 'department' or 'org'",
        ),
    ],
)
def test_invalid_proposals_leave_the_rule_lesson_with_the_reason(
    caller, llm_server, content, reason
):
    reply(llm_server, content)
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"
    assert capture_of(report_id).reason == f"{reason} ({RULE_STANDS_IN})"
    assert_rule_lesson_stands_in(capture_of(report_id))


def test_fenced_json_is_accepted(caller, llm_server):
    reply(llm_server, f"```json\n{json.dumps(PROPOSAL)}\n```")
    assert capture_execution_report(submit(caller)) == "captured"


def test_truncated_answer(caller, llm_server):
    reply(llm_server, '{"discovery": "cut', finish_reason="length")
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"
    assert capture_of(report_id).reason == (
        f"proposer answer truncated (max_tokens reached) ({RULE_STANDS_IN})"
    )
    assert_rule_lesson_stands_in(capture_of(report_id))


def test_below_min_confidence_is_dropped(caller, llm_server):
    set_procedural(caller.company, min_confidence=0.95)
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "below_confidence"
    capture = capture_of(report_id)
    assert capture.reason == "confidence 0.9 < min_confidence 0.95" and capture.confidence == 0.9
    assert not Memory.objects.exists()
    assert CostRecord.objects.count() == 1  # the call was made and is paid for


def test_a_model_that_does_not_stand_by_its_lesson_leaves_the_rule_lesson(caller, llm_server):
    """A small model copied the template's ``confidence: 0.0``: its lesson is dropped and the
    report's own (rule) lesson stands in, the LLM asked again later."""
    reply(llm_server, _proposal(confidence=0.0))
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"
    capture = capture_of(report_id)
    assert capture.reason == (
        f"LLM proposal dropped: confidence 0 < min_confidence 0.5 ({RULE_STANDS_IN})"
    )
    assert_rule_lesson_stands_in(capture)


def test_agent_at_memory_level_none(caller, llm_server):
    caller.agent.memory_level = "none"
    caller.agent.save()
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "skipped_memory_level"
    assert llm_server.requests_to(llm_server.CHAT_COMPLETIONS) == []


def test_session_level_agent_still_gets_a_persistent_lesson(caller, llm_server):
    caller.agent.memory_level = "session"
    caller.agent.save()
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"
    assert Memory.objects.get().level == "persistent"


def test_recurring_failure_is_deduplicated(caller, llm_server):
    first = submit(caller)
    second = submit(caller)
    capture_execution_report(first)
    assert capture_execution_report(second) == "captured"
    assert capture_of(second).memory_id == capture_of(first).memory_id
    assert capture_of(second).reason == "deduplicated: the agent already holds this lesson"
    assert Memory.objects.count() == 1 and ProceduralLesson.objects.count() == 1


def test_lessons_are_private_to_the_agent(caller, peer, outsider, llm_server):
    capture_execution_report(submit(caller))
    memory_id = capture_of(ExecutionReport.objects.get().pk).memory_id
    assert caller.client.get(f"/api/v1/memories/{memory_id}").status_code == 200
    assert peer.client.get(f"/api/v1/memories/{memory_id}").status_code == 404
    assert outsider.client.get(f"/api/v1/memories/{memory_id}").status_code == 404


def test_capture_is_idempotent(caller, llm_server):
    report_id = submit(caller)
    capture_execution_report(report_id)
    assert execution_report_capture(report_id=report_id).status == "captured"
    assert len(llm_server.requests_to(llm_server.CHAT_COMPLETIONS)) == 1


def test_submit_enqueues_the_capture_task_on_commit(caller, django_capture_on_commit_callbacks):
    from django_q.models import OrmQ

    with django_capture_on_commit_callbacks(execute=True):
        submit(caller)
    [queued] = OrmQ.objects.all()
    assert queued.func() == "memory.procedural.tasks.capture_execution_report"
    assert queued.key == "llm"  # the LLM cluster's queue, not the default cluster's
    with django_capture_on_commit_callbacks(execute=True):
        submit(caller, {"outcome": "succeeded"})  # not applicable: nothing queued
    assert OrmQ.objects.count() == 1


def test_a_capture_whose_task_was_lost_runs_after_the_grace(caller, company):
    """The broker lost the capture's task (or the cluster died before taking it): the
    every-minute retry dispatcher runs the capture once ``LOST_TASK_GRACE`` has passed —
    minutes, not the next day."""
    from django_q.models import OrmQ

    report_id = submit(caller)  # its on-commit task never reaches a worker
    capture = capture_of(report_id)
    assert (capture.status, capture.attempts) == ("queued", 0)
    assert capture.next_attempt_at == capture.created_at + LOST_TASK_GRACE

    before = jobs_dispatch(CAPTURE_JOB, now=capture.next_attempt_at - timedelta(seconds=1))
    assert before.companies == ()  # its own task still has the grace to run it
    OrmQ.objects.all().delete()
    dispatch = jobs_dispatch(CAPTURE_JOB, now=capture.next_attempt_at)
    assert dispatch.companies == (company.pk,)
    assert [(t.func(), t.args()) for t in OrmQ.objects.all()] == [
        (COMPANY_TASK, ("procedural.capture", company.pk))
    ]
    summary = jobs_run_company(CAPTURE_JOB, company_id=company.pk, now=capture.next_attempt_at)
    assert (summary.retried, summary.busy) == (1, False)
    capture = capture_of(report_id)
    assert (capture.status, capture.method, capture.attempts) == ("captured", "rule", 1)
    # the task arriving late finds nothing to do
    assert capture_execution_report(report_id) == "captured"
    assert capture_of(report_id).attempts == 1


def test_an_unexpected_error_is_recorded_not_left_running(caller, llm_server):
    import psycopg
    from django.db import connection

    # A real fault: another session holds the agent's memory-gate lock, and this session
    # gives up waiting for it (lock_timeout) while storing the lesson.
    other = psycopg.connect(**connection.get_connection_params(), autocommit=True)
    try:
        other.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))",
            [f"memory-gate:{caller.agent.pk}:default:procedural"],
        )
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
        report_id = submit(caller)
        assert capture_execution_report(report_id) == "failed"
    finally:
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
    reason = capture_of(report_id).reason
    assert reason.startswith("internal error: OperationalError: canceling statement due to lock")
    assert not Memory.objects.exists()  # the memory row rolled back with the lesson


def test_procedural_disabled_captures_nothing(caller, llm_server):
    set_procedural(caller.company, enabled=False)
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "disabled"
    assert capture_of(report_id).memory_id is None
    assert not Memory.objects.exists() and not ProceduralLesson.objects.exists()
    assert llm_server.requests_to(llm_server.CHAT_COMPLETIONS) == []


@pytest.mark.parametrize(("window", "status"), [(50, "not_applicable"), (2, "captured")])
def test_percentile_window_is_the_companys(window, status, caller, llm_server):
    # three old 10s then two recent 5s: over the last 50 scores p75 is 10 (9 is below it);
    # over the last 2 it is at most 9, so the success fires
    set_procedural(caller.company, capture={"type": "success", "percentile_window": window})
    for score in (10.0, 10.0, 10.0, 5.0, 5.0):
        capture_execution_report(submit(caller, {"outcome": "succeeded", "quality_score": score}))
    report_id = submit(caller, {"outcome": "succeeded", "quality_score": 9.0})
    assert capture_execution_report(report_id) == status
