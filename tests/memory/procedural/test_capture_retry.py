"""Captures without an LLM (rule lessons), their retry once an LLM answers, orphan reclaim,
and the append-only status history."""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.procedural.models import (
    CaptureStatusChange,
    ExecutionCapture,
    ProceduralLesson,
)
from memory.procedural.services.capture import (
    CAPTURE_JOB,
    CAPTURE_POLICY,
    MAX_ATTEMPTS,
    execution_captures_reclaim,
)
from memory.procedural.tasks import capture_execution_report
from synthorg.jobs.dispatch import jobs_run_company
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL
from tests.support.openai_server import ScriptedResponse, chat_completion_payload, error_payload

pytestmark = pytest.mark.django_db
URL = "/api/v1/executions"

RULE_TIERS = {
    "discovery": (
        "'deploy' tasks with a 'timeout' error in `helm_upgrade`: change `helm_upgrade`'s "
        "inputs or escalate; do not repeat the recovery the agent reported (still failed): "
        "Retried twice with the same timeout."
    ),
    "condition": (
        "a 'deploy' task meets a 'timeout' error in `helm_upgrade` "
        "(helm upgrade timed out after 300s)."
    ),
    "action": (
        "Change `helm_upgrade`'s inputs or escalate. Do not repeat the recovery the agent "
        "reported (still failed): Retried twice with the same timeout."
    ),
    "rationale": (
        "Evidence: 1 execution report (1 failed); task type 'deploy'; error category "
        "'timeout'; failing tool `helm_upgrade`; 2 retries; reported {day}. Written without "
        "an LLM, from the report's fields."
    ),
    "execution_steps": [
        "Before running `helm_upgrade` in a 'deploy' task, expect a 'timeout' error: "
        "helm upgrade timed out after 300s",
        "Change `helm_upgrade`'s inputs or escalate.",
        "Do not repeat the recovery the agent reported (still failed): Retried twice with "
        "the same timeout.",
    ],
}


def submit(caller, body=FAILED_REPORT) -> str:
    response = caller.client.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def capture_of(report_id) -> ExecutionCapture:
    return ExecutionCapture.objects.get(report_id=report_id)


def history(report_id) -> list[tuple]:
    return list(
        CaptureStatusChange.objects.filter(report_id=report_id)
        .order_by("id")
        .values_list("status", "method", "attempt")
    )


def retry(company, now=None):
    """What the retry schedule does for ``company``: reclaim, then its own retry task."""
    execution_captures_reclaim(now=now)
    return jobs_run_company(CAPTURE_JOB, company_id=company.pk, now=now)


@pytest.fixture
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


def test_without_an_llm_the_report_becomes_a_rule_lesson(caller, no_llm):
    report_id = submit(caller)
    assert capture_execution_report(report_id) == "captured"

    capture = capture_of(report_id)
    assert (capture.method, capture.strategy, capture.confidence) == ("rule", "failure", 0.6)
    lesson = ProceduralLesson.objects.get(memory_id=capture.memory_id)
    assert lesson.method == "rule" and lesson.proposer_model == ""
    assert {
        "discovery": lesson.discovery,
        "condition": lesson.condition,
        "action": lesson.action,
        "rationale": lesson.rationale,
        "execution_steps": lesson.execution_steps,
    } == {
        **RULE_TIERS,
        "rationale": RULE_TIERS["rationale"].format(day=f"{lesson.report.created_at:%Y-%m-%d}"),
    }
    memory = Memory.objects.get(pk=capture.memory_id)
    assert memory.content == RULE_TIERS["discovery"]
    assert memory.tags == ["non-inferable", "rule-based", "deploy", "timeout"]
    # waiting for an LLM: due, but the schedule leaves it while none is configured
    assert capture.next_attempt_at is not None
    assert history(report_id) == [
        ("queued", "", 0),
        ("running", "", 1),
        ("captured", "rule", 1),
    ]
    body = caller.client.get(f"{URL}/{report_id}").json()
    assert (body["capture_status"], body["capture_method"]) == ("captured", "rule")


def test_rule_lessons_are_deduplicated_like_any_lesson(caller, no_llm):
    first, second = submit(caller), submit(caller)
    capture_execution_report(first)
    capture_execution_report(second)
    assert capture_of(second).memory_id == capture_of(first).memory_id
    assert capture_of(second).reason == "deduplicated: the agent already holds this lesson"
    assert Memory.objects.count() == 1


def test_a_rule_lesson_waits_for_an_llm_then_is_superseded(caller, settings, no_llm):
    report_id = submit(caller)
    capture_execution_report(report_id)
    rule_memory = capture_of(report_id).memory_id
    later = timezone.now() + timedelta(minutes=5)
    summary = retry(caller.agent.company, now=later)
    assert (summary.retried, summary.waiting) == (0, 0)  # not due while no LLM is configured

    from tests.support.openai_server import FakeOpenAIServer

    with FakeOpenAIServer(chat_reply=json.dumps(PROPOSAL)) as server:
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        summary = retry(caller.agent.company, now=later)
    assert (summary.retried, summary.waiting) == (1, 0)
    capture = capture_of(report_id)
    assert (capture.status, capture.method, capture.next_attempt_at) == ("captured", "llm", None)
    assert capture.memory_id != rule_memory
    old = Memory.objects.get(pk=rule_memory)  # kept, marked superseded, never deleted
    assert old.superseded_by_id == capture.memory_id and old.superseded_at is not None
    assert Memory.objects.get(pk=capture.memory_id).content == PROPOSAL["discovery"]
    assert history(report_id)[-3:] == [
        ("queued", "rule", 1),
        ("running", "rule", 2),
        ("captured", "llm", 2),
    ]


def test_failed_captures_are_retried_after_an_outage(caller, llm_server):
    """An LLM outage (5xx): every failed capture produces a lesson once it recovers."""
    reports = [
        submit(caller, {**FAILED_REPORT, "task_type": f"deploy-{i}", "task_title": f"T{i}"})
        for i in range(6)
    ]
    state = {"down": True}

    def answer(request):
        if state["down"]:
            return ScriptedResponse(status=503, json=error_payload("down"))
        report = json.loads(request.json()["messages"][1]["content"].split("\n", 1)[1])
        kind = report["task_type"]
        lesson = {**PROPOSAL, "discovery": f"Lesson {kind}: unrelated words {kind * 3}"}
        return ScriptedResponse(json=chat_completion_payload(json.dumps(lesson)))

    llm_server.set_handler(llm_server.CHAT_COMPLETIONS, answer)
    for report_id in reports:  # never worse than no LLM: the rule lesson stands in
        assert capture_execution_report(report_id) == "captured"
    for report_id in reports:
        capture = capture_of(report_id)
        assert capture.method == "rule" and capture.memory_id is not None
        assert capture.reason.startswith("llm_error: LLMTransientError")
        assert capture.next_attempt_at == capture.completed_at + CAPTURE_POLICY.delay(1)

    # Still down: one call for the company, the others wait uncharged.
    calls = len(llm_server.requests_to(llm_server.CHAT_COMPLETIONS))
    soon = timezone.now() + timedelta(minutes=2)
    summary = retry(caller.agent.company, now=soon)
    assert (summary.retried, summary.waiting) == (1, 5)
    assert len(llm_server.requests_to(llm_server.CHAT_COMPLETIONS)) == calls + 1
    assert sorted(capture_of(r).attempts for r in reports) == [1, 1, 1, 1, 1, 2]

    state["down"] = False  # recovered
    later = timezone.now() + timedelta(hours=2)
    retry(caller.agent.company, now=later)
    captures = [capture_of(r) for r in reports]
    assert [(c.status, c.method) for c in captures] == [("captured", "llm")] * 6
    assert all(c.next_attempt_at is None for c in captures)
    assert len({c.memory_id for c in captures} - {None}) == 6  # six lessons


def test_retries_are_bounded(caller, llm_server):
    llm_server.set_handler(
        llm_server.CHAT_COMPLETIONS,
        lambda request: ScriptedResponse(status=500, json=error_payload("down")),
    )
    report_id = submit(caller)
    capture_execution_report(report_id)
    now = timezone.now()
    for _ in range(MAX_ATTEMPTS + 2):
        now += timedelta(hours=2)
        retry(caller.agent.company, now=now)
    capture = capture_of(report_id)
    assert capture.attempts == MAX_ATTEMPTS and capture.next_attempt_at is None
    assert capture.reason.endswith(
        f"(gave up after {MAX_ATTEMPTS} attempts; an operator can re-queue it)"
    )


def test_orphaned_running_captures_are_reclaimed(caller, llm_server):
    report_id = submit(caller)
    ExecutionCapture.objects.filter(report_id=report_id).update(
        status="running", attempts=1, updated_at=timezone.now() - timedelta(minutes=16)
    )
    fresh = submit(caller, {**FAILED_REPORT, "task_type": "other"})
    ExecutionCapture.objects.filter(report_id=fresh).update(
        status="running", attempts=1, updated_at=timezone.now()
    )
    assert execution_captures_reclaim() == 1
    summary = jobs_run_company(CAPTURE_JOB, company_id=caller.agent.company.pk)
    assert summary.retried == 1
    assert capture_of(report_id).status == "captured"
    assert capture_of(fresh).status == "running"  # within the timeout: left alone
    statuses = [s for s, _, _ in history(report_id)]
    assert statuses[-4:] == ["failed", "queued", "running", "captured"]
    reclaimed = CaptureStatusChange.objects.filter(report_id=report_id, status="failed").get()
    assert reclaimed.reason.startswith("reclaimed: the worker")


def test_status_history_is_append_only(caller, no_llm):
    report_id = submit(caller)
    capture_execution_report(report_id)
    for sql in (
        "UPDATE procedural_capturestatuschange SET status = 'failed'",
        "DELETE FROM procedural_capturestatuschange",
    ):
        with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as c:
            c.execute(sql)
        assert isinstance(error.value.__cause__, psycopg.errors.RaiseException)
        assert "append-only" in str(error.value)
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as c:
        c.execute("TRUNCATE procedural_capturestatuschange CASCADE")  # no privilege, no trigger
    assert len(history(report_id)) == 3


def test_peers_copies_of_a_rule_lesson_are_superseded_with_it(caller, peer, settings, no_llm):
    """Propagation copies the rule lesson (scope: the strategy's bound, role) to a same-role
    peer; when the role-scoped LLM lesson replaces it, the peer's copy is replaced by the LLM
    lesson's copy (kept, marked superseded)."""
    from persistence.models import Agent
    from tests.memory.procedural.conftest import set_procedural
    from tests.support.openai_server import FakeOpenAIServer

    Agent.objects.filter(pk__in=[caller.agent.pk, peer.agent.pk]).update(role="deployer")
    set_procedural(caller.company, propagation={"strategy": "role"})
    report_id = submit(caller)
    capture_execution_report(report_id)
    rule_copy = ProceduralLesson.objects.get(origin="propagated", memory__agent=peer.agent)
    assert (rule_copy.method, rule_copy.propagated_from_id) == (
        "rule",
        capture_of(report_id).memory_id,
    )

    with FakeOpenAIServer(chat_reply=json.dumps({**PROPOSAL, "scope": "role"})) as server:
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        retry(caller.company, now=timezone.now() + timedelta(minutes=5))

    llm_memory = capture_of(report_id).memory_id
    llm_copy = ProceduralLesson.objects.get(
        origin="propagated", memory__agent=peer.agent, memory__superseded_at__isnull=True
    )
    assert (llm_copy.method, llm_copy.propagated_from_id) == ("llm", llm_memory)
    old = Memory.objects.get(pk=rule_copy.memory_id)
    assert old.superseded_by_id == llm_copy.memory_id and old.superseded_at is not None
    live = Memory.objects.filter(agent=peer.agent, superseded_at__isnull=True)
    assert list(live.values_list("content", flat=True)) == [PROPOSAL["discovery"]]


def test_a_private_llm_lesson_retires_the_peers_copies_of_the_rule_lesson(
    caller, peer, settings, no_llm
):
    """The LLM judged the lesson private (scope agent): the peer's copy of the rule lesson it
    replaces is not re-delivered, so it is superseded by the author's LLM lesson (kept,
    restorable, out of retrieval) instead of staying live as a stale rule lesson."""
    from persistence.models import Agent
    from tests.memory.procedural.conftest import set_procedural
    from tests.support.openai_server import FakeOpenAIServer

    Agent.objects.filter(pk__in=[caller.agent.pk, peer.agent.pk]).update(role="deployer")
    set_procedural(caller.company, propagation={"strategy": "role"})
    report_id = submit(caller)
    capture_execution_report(report_id)
    rule_copy = ProceduralLesson.objects.get(origin="propagated", memory__agent=peer.agent)

    with FakeOpenAIServer(chat_reply=json.dumps(PROPOSAL)) as server:  # scope "agent"
        settings.SYNTHORG_LLM = {"BASE_URL": server.base_url, "MODEL": "m", "MAX_RETRIES": 0}
        retry(caller.company, now=timezone.now() + timedelta(minutes=5))

    llm_memory = capture_of(report_id).memory_id
    old = Memory.objects.get(pk=rule_copy.memory_id)
    assert old.superseded_by_id == llm_memory and old.superseded_at is not None
    assert not Memory.objects.filter(agent=peer.agent, superseded_at__isnull=True).exists()
    assert Memory.objects.get(pk=llm_memory).scope == "agent"
