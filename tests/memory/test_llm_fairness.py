"""One company's model hangs: the other companies' LLM work still runs.

The LLM base URL is server-wide, the model per company (``memory.procedural.model``), so the
stand-in hangs for company A's model only and answers company B's. Real transactions
(``transactional_db``), real threads standing in for the LLM cluster's workers (two, like
``Q_LLM_WORKERS``) pulling the real q2 task functions from one queue, and the real stand-in
server; nothing of ours is mocked. A's hanging call stays open until the stand-in stops, so
"B finished while A hangs" is a fact about state, not about time.
"""

from __future__ import annotations

import io
import json
import queue
import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from memory.core.models.memory import Memory
from memory.ingestion.models import (
    Conversation,
    DreamRun,
    ExtractionRun,
    ScheduledDream,
)
from memory.ingestion.services import extraction
from memory.ingestion.services.dream_requests import DREAM_REQUEST_JOB, dream_request
from memory.ingestion.services.dream_schedule import dream_outcome, dream_scheduled
from memory.ingestion.tasks import dream_company, extract_conversation
from memory.procedural.evolver.cycles import evolver_cycle_outcome, evolver_cycle_scheduled
from memory.procedural.evolver.draft_retry import DRAFT_JOB
from memory.procedural.evolver.models import (
    DraftFailure,
    EvolverCycle,
    EvolverReport,
)
from memory.procedural.evolver.tasks import run_company_evolver
from memory.procedural.models import CaptureStatusChange, ExecutionCapture
from memory.procedural.services.capture import CAPTURE_JOB, DEFERRED
from memory.procedural.services.reports import execution_report_submit
from memory.procedural.tasks import capture_execution_report
from orgmemory.models import ApprovalItem
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from synthorg.jobs.dispatch import COMPANY_TASK, SLOT_DEFERRED, jobs_dispatch, jobs_run_company
from synthorg.jobs.models import JobTurn
from synthorg.jobs.services import SLOT_DEFER
from synthorg.jobs.tasks import jobs_company, jobs_dispatch_kind
from synthorg.llm.slots import slot_key
from tests.conftest import make_agent_caller
from tests.memory.ingestion.conftest import configure, fact, flush
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL
from tests.orgmemory.conftest import allow_flush_of_append_only_tables  # noqa: F401
from tests.persistence.factories import CompanyFactory
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn
from tests.support.llm_slots import slot_held_elsewhere, slot_taken_elsewhere

LLM_WORKERS = 2
PROFILE = replace(PROFILES["openai"], models=("model-a", "model-b"))
DEFERRED_REASON = DEFERRED.format(limit=1)

pytestmark = pytest.mark.usefixtures("allow_flush_of_append_only_tables")


def company_using(model: str):
    company = CompanyFactory()
    company_config_set(company=company, data={"memory": {"procedural": {"model": model}}})
    return company


def submit(caller, n: int) -> str:
    body = {**FAILED_REPORT, "task_type": f"deploy-{n}", "task_title": f"Deploy {n}"}
    response = caller.client.post("/api/v1/executions", body, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


@pytest.fixture
def stand_in(settings):
    with LLMProviderStandIn(PROFILE, answer=json.dumps(PROPOSAL)) as llm:
        # Per-attempt and total timeouts far beyond the test: A's call ends when the
        # stand-in stops, never by itself.
        settings.SYNTHORG_LLM = llm.settings(TIMEOUT=300, TOTAL_TIMEOUT=300, MAX_RETRIES=0)
        llm.hanging_models = {"model-a"}
        yield llm


class Workers:
    """``LLM_WORKERS`` threads running task calls from one queue, each on its own DB
    connection, reporting every finished task on ``done``."""

    def __init__(self, count: int) -> None:
        self.tasks: queue.Queue = queue.Queue()
        self.done: queue.Queue = queue.Queue()
        self.threads = [threading.Thread(target=self._work) for _ in range(count)]

    def _work(self) -> None:
        try:
            while (item := self.tasks.get()) is not None:
                key, fn, args = item
                try:
                    self.done.put((key, fn(*args)))
                except Exception as exc:  # surfaced by the test
                    self.done.put((key, exc))
        finally:
            connection.close()

    def __enter__(self) -> Workers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        for _ in self.threads:
            self.tasks.put(None)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
            assert not thread.is_alive()

    def finished(self, count: int) -> dict:
        # The timeout only keeps a broken run from hanging CI; nothing is asserted on time.
        return dict(self.done.get(timeout=60) for _ in range(count))


def test_b_captures_while_a_model_hangs_on_the_llm_workers(stand_in):
    company_a, company_b = company_using("model-a"), company_using("model-b")
    a_caller, b_caller = make_agent_caller(company=company_a), make_agent_caller(company=company_b)
    a_reports = [submit(a_caller, n) for n in range(3)]
    b_reports = [submit(b_caller, n) for n in range(3)]

    with Workers(LLM_WORKERS) as workers:
        # Worst case for B: all of A's captures are queued in front of B's.
        for report_id in a_reports + b_reports:
            workers.tasks.put((report_id, capture_execution_report, (report_id,)))
        finished = workers.finished(len(a_reports) + len(b_reports) - 1)

        # One of A's captures (whichever worker took its slot first) still hangs on one
        # worker; everything else is done.
        (hanging,) = set(a_reports) - set(finished)
        assert set(finished) == set(a_reports + b_reports) - {hanging}
        assert ExecutionCapture.objects.get(report_id=hanging).status == "running"
        assert [finished[r] for r in b_reports] == ["captured"] * 3
        b = ExecutionCapture.objects.filter(report_id__in=b_reports)
        assert {(c.status, c.method, c.attempts) for c in b} == {("captured", "llm", 1)}
        # A's other captures did not wait for a slot: deferred, not charged an attempt.
        for report_id in set(a_reports) - {hanging}:
            capture = ExecutionCapture.objects.get(report_id=report_id)
            assert (capture.status, capture.attempts, capture.reason) == (
                "queued",
                0,
                DEFERRED_REASON,
            )
            assert capture.next_attempt_at > capture.updated_at
            assert capture.next_attempt_at - capture.updated_at == SLOT_DEFER
            assert list(
                CaptureStatusChange.objects.filter(report_id=report_id)
                .order_by("id")
                .values_list("status", "attempt", "reason")
            ) == [("queued", 0, ""), ("running", 1, ""), ("queued", 0, DEFERRED_REASON)]
        models = [r.json()["model"] for r in stand_in.chat_requests]
        assert sorted(models) == ["model-a"] + ["model-b"] * 3

        stand_in.server.stop()  # A's hanging call ends: the rule lesson stands in
        assert workers.finished(1)[hanging] == "captured"
    workers.join()
    capture = ExecutionCapture.objects.get(report_id=hanging)
    assert (capture.status, capture.method) == ("captured", "rule")
    assert capture.reason.startswith("llm_error: ")


def test_the_retry_schedule_gives_each_company_its_own_task():
    company_a, company_b = CompanyFactory(), CompanyFactory()
    a_caller, b_caller = make_agent_caller(company=company_a), make_agent_caller(company=company_b)
    due = timezone.now() - timedelta(seconds=1)
    for n, caller in enumerate((a_caller, a_caller, b_caller)):
        report_id = submit(caller, n)
        ExecutionCapture.objects.filter(report_id=report_id).update(
            status="failed", reason="llm_error: down", next_attempt_at=due
        )
    OrmQ.objects.all().delete()  # the submits' own capture tasks

    dispatch = jobs_dispatch(CAPTURE_JOB)

    assert dispatch.companies == tuple(sorted([company_a.pk, company_b.pk]))
    queued = [(row.key, row.func(), row.task["args"]) for row in OrmQ.objects.order_by("id")]
    assert queued == [
        ("llm", COMPANY_TASK, ("procedural.capture", company_id))
        for company_id in dispatch.companies
    ]
    # Nothing ran in the dispatching task.
    assert set(ExecutionCapture.objects.values_list("status", flat=True)) == {"failed"}


def test_a_company_retry_skips_while_its_slot_is_held_elsewhere(stand_in):
    stand_in.hanging_models = set()
    company = company_using("model-b")
    caller = make_agent_caller(company=company)
    report_id = submit(caller, 1)
    ExecutionCapture.objects.filter(report_id=report_id).update(
        status="failed", reason="llm_error: down", attempts=1, next_attempt_at=timezone.now()
    )
    with slot_held_elsewhere(company.pk):
        summary = jobs_run_company(CAPTURE_JOB, company_id=company.pk)
        assert (summary.busy, summary.retried, summary.waiting) == (True, 0, 1)
        capture = ExecutionCapture.objects.get(report_id=report_id)
        assert (capture.status, capture.attempts) == ("failed", 1)
        assert stand_in.chat_requests == []

    summary = jobs_run_company(CAPTURE_JOB, company_id=company.pk)
    assert (summary.busy, summary.retried) == (False, 1)
    capture = ExecutionCapture.objects.get(report_id=report_id)
    assert (capture.status, capture.method, capture.attempts) == ("captured", "llm", 2)


def test_slot_keys_are_distinct_per_company_and_slot():
    keys = {slot_key(company, slot) for company in (1, 2, 2**39) for slot in (0, 1, 254)}
    assert len(keys) == 9
    assert all(0 < key < 2**63 for key in keys)


# --- conversation extraction ---------------------------------------------------------------

FACTS = {"facts": [fact("Billing deploys every Friday at noon UTC.")]}
EXTRACTION_DEFERRED_REASON = extraction.DEFERRED.format(limit=1)


def extracting_company(model: str):
    company = CompanyFactory()
    configure(company, extraction={"model": model, "store_turns": False})
    return company


def due_conversation(company, name: str):
    """A conversation of a new agent of ``company`` whose extraction is due now."""
    agent = make_agent_caller(company=company).agent
    conversation = flush(
        agent, [f"Ana said billing deploys on Fridays ({name})."], conversation=name
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        extraction_due_at=timezone.now() - timedelta(seconds=1)
    )
    return conversation


def test_b_extracts_while_a_model_hangs_on_the_llm_workers(stand_in):
    stand_in.answer = json.dumps(FACTS)
    company_a, company_b = extracting_company("model-a"), extracting_company("model-b")
    a_convs = [due_conversation(company_a, f"a-{n}").pk for n in range(3)]
    b_convs = [due_conversation(company_b, f"b-{n}").pk for n in range(3)]

    with Workers(LLM_WORKERS) as workers:
        # Worst case for B: all of A's extractions are queued in front of B's.
        for pk in a_convs + b_convs:
            workers.tasks.put((pk, extract_conversation, (pk,)))
        finished = workers.finished(len(a_convs) + len(b_convs) - 1)

        (hanging,) = set(a_convs) - set(finished)
        assert set(finished) == set(a_convs + b_convs) - {hanging}
        assert [finished[pk] for pk in b_convs] == ["succeeded"] * 3
        b_runs = ExtractionRun.objects.filter(conversation_id__in=b_convs)
        assert {(r.status, r.method, r.added) for r in b_runs} == {("succeeded", "llm", 1)}
        assert b_runs.count() == 3
        assert ExtractionRun.objects.get(conversation_id=hanging).status == "running"
        # A's other extractions did not wait for a slot: each run deferred (by design: the
        # kernel's deferral, back to queued), no attempt counted, due again at its turn.
        for pk in set(a_convs) - {hanging}:
            assert finished[pk] == "queued"
            [run] = ExtractionRun.objects.filter(conversation_id=pk)
            assert (run.status, run.reason, run.first_seq, run.last_seq) == (
                "queued",
                EXTRACTION_DEFERRED_REASON,
                1,
                1,
            )
            conversation = Conversation.objects.get(pk=pk)
            assert (run.attempts, run.claimed_until) == (0, None)
            assert conversation.extracted_through_seq == 0
            assert run.next_attempt_at <= timezone.now() + SLOT_DEFER
        models = [r.json()["model"] for r in stand_in.chat_requests]
        assert sorted(models) == ["model-a"] + ["model-b"] * 3
        # Found busy again (the next sweep, another worker): no second row for one wait.
        again = min(set(a_convs) - {hanging})
        assert extract_conversation(again) is None
        assert ExtractionRun.objects.filter(conversation_id=again).count() == 1

        stand_in.server.stop()  # A's hanging call ends
        assert workers.finished(1)[hanging] == "failed"
    workers.join()


def test_a_deferred_extraction_still_stores_the_turns_at_once(stand_in):
    """Only the LLM's facts wait for a free slot: the turns (``store_turns``, the default)
    need no LLM and are searchable while the company's slot is held elsewhere."""
    stand_in.hanging_models = set()
    stand_in.answer = json.dumps(FACTS)
    company = CompanyFactory()
    configure(company, extraction={"model": "model-b"})
    conversation = due_conversation(company, "b-1")
    with slot_held_elsewhere(company.pk):
        assert extract_conversation(conversation.pk) == "queued"  # by design: deferred
        runs = ExtractionRun.objects.filter(conversation=conversation)
        assert sorted(runs.values_list("trigger", "method", "status", "first_seq", "last_seq")) == [
            ("debounce", "", "queued", 1, 1),
            ("turns", "verbatim", "succeeded", 1, 1),
        ]
        turn = "Ana said billing deploys on Fridays (b-1)."
        stored = Memory.objects.filter(agent=conversation.agent)
        assert list(stored.values_list("content", flat=True)) == [turn]
        assert Conversation.objects.get(pk=conversation.pk).verbatim_through_seq == 1
        assert stand_in.chat_requests == []

    # by design: a deferred run is due again after the kernel's SLOT_DEFER
    assert extraction.conversations_extract_due(now=timezone.now() + SLOT_DEFER) == 1
    runs = ExtractionRun.objects.filter(conversation=conversation)
    assert sorted(runs.values_list("method", "status")) == [
        ("llm", "succeeded"),
        ("verbatim", "succeeded"),  # not stored a second time by the LLM run
    ]
    assert Memory.objects.filter(agent=conversation.agent).count() == 2  # the turn + a fact


def test_the_extraction_sweep_gives_each_company_its_own_task(stand_in):
    company_a, company_b = extracting_company("model-a"), extracting_company("model-b")
    for company, name in ((company_a, "a-1"), (company_a, "a-2"), (company_b, "b-1")):
        due_conversation(company, name)
    OrmQ.objects.all().delete()

    dispatched = jobs_dispatch_kind("ingestion.extraction")["companies"]

    assert dispatched == sorted([company_a.pk, company_b.pk])
    queued = [(row.key, row.func(), row.task["args"]) for row in OrmQ.objects.order_by("id")]
    assert queued == [
        ("llm", COMPANY_TASK, ("ingestion.extraction", company_id)) for company_id in dispatched
    ]
    # Nothing ran in the sweep itself: the runs are queued (by design), no LLM call.
    assert set(ExtractionRun.objects.values_list("status", flat=True)) == {"queued"}
    assert stand_in.chat_requests == []


def test_a_company_extraction_sweep_skips_while_its_slot_is_held_elsewhere(stand_in):
    stand_in.hanging_models = set()
    stand_in.answer = json.dumps(FACTS)
    company = CompanyFactory()
    configure(company, extraction={"model": "model-b"})  # store_turns: the default
    conversation = due_conversation(company, "b-1")
    with slot_held_elsewhere(company.pk):
        assert jobs_company("ingestion.extraction", company.pk) == {
            "reclaimed": 0,
            "retried": 0,
            "waiting": 1,
            "busy": True,
        }
        # no LLM call, but the turns are remembered at once (only the facts wait)
        assert stand_in.chat_requests == []
        runs = ExtractionRun.objects.filter(conversation=conversation)
        assert sorted(runs.values_list("method", "status", "first_seq", "last_seq")) == [
            ("", "queued", 1, 1),  # by design: waiting for its turn, queued
            ("verbatim", "succeeded", 1, 1),
        ]
        stored = Memory.objects.filter(agent=conversation.agent)
        assert list(stored.values_list("content", flat=True)) == [
            "Ana said billing deploys on Fridays (b-1)."
        ]
        # found busy again by the next sweep: no second row for one wait, no second turn
        jobs_company("ingestion.extraction", company.pk)
        assert ExtractionRun.objects.filter(conversation=conversation).count() == 2
        assert stored.count() == 1

    assert jobs_company("ingestion.extraction", company.pk) == {
        "reclaimed": 0,
        "retried": 1,
        "waiting": 0,
        "busy": False,
    }
    run = ExtractionRun.objects.get(conversation=conversation, method="llm")
    assert (run.status, run.added) == ("succeeded", 1)
    assert Memory.objects.filter(agent=conversation.agent).count() == 2  # the turn + a fact


def answer_by_schema(body: dict) -> str:
    """Facts for an extraction, a lesson for a capture (the schema names what is asked)."""
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    return json.dumps(FACTS if schema.get("name") == "extracted_facts" else PROPOSAL)


def failed_capture(company) -> str:
    report_id = submit(make_agent_caller(company=company), 1)
    ExecutionCapture.objects.filter(report_id=report_id).update(
        status="failed", reason="llm_error: down", attempts=1, next_attempt_at=timezone.now()
    )
    return report_id


def test_a_capture_retry_found_busy_is_served_by_the_extraction_sweep(stand_in):
    """The finding: the capture retry and the extraction sweep fire in the same second every
    minute against one slot, and the retry was skipped as busy ten minutes in a row. Found
    busy, the retry waits for its turn; the sweep holding the slot serves it before letting
    go — no minute is lost."""
    stand_in.hanging_models = set()
    stand_in.answer = answer_by_schema
    company = company_using("model-b")
    configure(company, extraction={"model": "model-b", "store_turns": False})
    report_id = failed_capture(company)
    conversation = due_conversation(company, "b-1")

    with slot_held_elsewhere(company.pk):  # the sweep holds the slot as the retry fires
        summary = jobs_run_company(CAPTURE_JOB, company_id=company.pk)
    assert (summary.busy, summary.retried) == (True, 0)
    assert list(JobTurn.objects.values_list("company_id", "kind")) == [
        (company.pk, "procedural.capture")
    ]

    assert jobs_company("ingestion.extraction", company.pk) == {
        "reclaimed": 0,
        "retried": 1,
        "waiting": 0,
        "busy": False,
    }

    capture = ExecutionCapture.objects.get(report_id=report_id)
    assert (capture.status, capture.method, capture.attempts) == ("captured", "llm", 2)
    assert ExtractionRun.objects.get(conversation=conversation).status == "succeeded"
    schemas = [r.json()["response_format"]["json_schema"]["name"] for r in stand_in.chat_requests]
    assert schemas == ["extracted_facts", "procedural_lesson"]  # its own work first
    assert not JobTurn.objects.exists()


def test_an_extraction_sweep_found_busy_is_served_by_the_capture_retry(stand_in):
    stand_in.hanging_models = set()
    stand_in.answer = answer_by_schema
    company = company_using("model-b")
    configure(company, extraction={"model": "model-b", "store_turns": False})
    report_id = failed_capture(company)
    conversation = due_conversation(company, "b-1")

    with slot_held_elsewhere(company.pk):
        assert jobs_company("ingestion.extraction", company.pk) == {
            "reclaimed": 0,
            "retried": 0,
            "waiting": 1,
            "busy": True,
        }
    assert list(JobTurn.objects.values_list("kind", flat=True)) == ["ingestion.extraction"]
    assert stand_in.chat_requests == []

    summary = jobs_run_company(CAPTURE_JOB, company_id=company.pk)

    assert (summary.busy, summary.retried) == (False, 1)
    run = ExtractionRun.objects.get(conversation=conversation, method="llm")
    assert (run.status, run.added) == ("succeeded", 1)
    capture = ExecutionCapture.objects.get(report_id=report_id)
    assert (capture.status, capture.method) == ("captured", "llm")
    assert not JobTurn.objects.exists()


def test_the_first_failed_extraction_stops_the_companys_batch(stand_in):
    stand_in.hanging_models = set()
    stand_in.fault = Fault.SERVER_ERROR
    company = extracting_company("model-b")
    first, second = due_conversation(company, "b-1"), due_conversation(company, "b-2")
    Conversation.objects.filter(pk=second.pk).update(extraction_due_at=timezone.now())

    summary = jobs_company("ingestion.extraction", company.pk)

    assert summary == {"reclaimed": 0, "retried": 1, "waiting": 1, "busy": False}
    assert len(stand_in.chat_requests) == 1  # an outage costs one call per company per sweep
    # the failed LLM run, and its turns stored verbatim meanwhile; nothing for the second
    assert set(ExtractionRun.objects.values_list("conversation_id", "method", "status")) == {
        (first.pk, "llm", "failed"),
        (first.pk, "verbatim", "succeeded"),
        (second.pk, "", "queued"),  # by design: queued by the dispatch, not run
    }
    second.refresh_from_db()
    waiting = ExtractionRun.objects.get(conversation=second)
    assert (waiting.attempts, second.extracted_through_seq) == (0, 0)


# --- dream ---------------------------------------------------------------------------------


def scheduled_history(job) -> list[tuple[str, str, int, str]]:
    """A company's scheduled run's status history (an evolver cycle, a scheduled dream)."""
    return list(job.history.order_by("id").values_list("status", "reason", "attempt", "method"))


def waited_twice(method: str) -> list[tuple[str, str, int, str]]:
    """The history of a scheduled run that found its company's slots busy at its tick and at
    a second tick, then ran at its turn."""
    deferred = SLOT_DEFERRED.format(limit=1)
    return [
        ("queued", "", 0, ""),  # the schedule's tick
        ("running", "", 1, ""),
        ("queued", deferred, 0, ""),  # every slot taken
        ("running", "", 1, ""),  # the second tick
        ("queued", deferred, 0, ""),
        ("running", "", 1, ""),  # its turn
        ("done", "", 1, method),
    ]


def ran_at_once(method: str) -> list[tuple[str, str, int, str]]:
    return [("queued", "", 0, ""), ("running", "", 1, ""), ("done", "", 1, method)]


def assert_waits_for_its_turn(kind: str, company_id: int, *, later) -> None:
    """``kind`` waits for a turn at the company (nothing else does), and the kind's own
    dispatch at ``later`` hands the company its task on the LLM cluster too."""
    assert list(JobTurn.objects.values_list("company_id", "kind")) == [(company_id, kind)]
    OrmQ.objects.all().delete()
    assert jobs_dispatch_kind(kind, now=later) == {"reclaimed": 0, "companies": [company_id]}
    queued = [(row.key, row.func(), row.task["args"]) for row in OrmQ.objects.all()]
    assert queued == [("llm", COMPANY_TASK, (kind, company_id))]


def test_a_scheduled_dream_waits_for_its_turn_while_the_companys_slot_is_held(stand_in):
    """By design (issue 34): a busy slot no longer re-arms the dream a minute later with no
    turn (a busy company's dream could be skipped indefinitely); the dream is a durable job
    that waits for its turn and the slot's holder serves it."""
    stand_in.hanging_models = set()
    company, other = CompanyFactory(), CompanyFactory()
    agent = make_agent_caller(company=company, memory_level="persistent").agent
    make_agent_caller(company=other, memory_level="persistent")
    audits = AuditEntry.objects.filter(company__in=[company, other]).count()
    deferred = SLOT_DEFERRED.format(limit=1)
    now = timezone.now()
    with slot_held_elsewhere(company.pk):
        dream = dream_scheduled(company=company, now=now)
        assert dream_outcome(dream) == "deferred"  # nothing ran, the worker is free
        # Another company's dream is not held up by this company's busy slot.
        assert dream_company(other.pk) == 1
        # A tick while it waits takes the same dream: one open dream per company.
        assert dream_company(company.pk) == "deferred"
        dream = ScheduledDream.objects.get(company=company)
        assert (dream.status, dream.attempts, dream.reason, dream.runs) == (
            "queued", 0, deferred, 0,
        )  # fmt: skip
        assert dream.next_attempt_at == dream.updated_at + SLOT_DEFER
        assert not DreamRun.objects.filter(company=company).exists()
        assert not Schedule.objects.filter(name__startswith="ingestion-dream-deferred").exists()
        assert stand_in.chat_requests == []
        later = dream.next_attempt_at
        assert_waits_for_its_turn("ingestion.dream", company.pk, later=later)

    # Its turn: the dream request batch that takes the company's slot serves the waiting
    # scheduled dream in the same pass (oldest due first: the request, then the dream).
    request = dream_request(agent=agent, now=now - timedelta(seconds=1))
    summary = jobs_run_company(DREAM_REQUEST_JOB, company_id=company.pk, now=later)
    assert (summary.retried, summary.waiting, summary.busy) == (1, 0, False)
    request.refresh_from_db()
    assert (request.status, request.run.trigger) == ("ran", "agent")
    dream.refresh_from_db()
    assert (dream.status, dream.attempts, dream.reason, dream.next_attempt_at, dream.runs) == (
        "done", 1, "", None, 1,
    )  # fmt: skip
    assert list(
        DreamRun.objects.filter(company=company).order_by("created_at", "id")
        .values_list("trigger", "status")
    ) == [("agent", "nothing_new"), ("schedule", "nothing_new")]  # fmt: skip
    assert scheduled_history(dream) == waited_twice("")  # no journal: nothing_new, no method
    assert not JobTurn.objects.exists()
    done = ScheduledDream.objects.get(company=other)
    assert (done.status, done.runs) == ("done", 1)
    assert scheduled_history(done) == ran_at_once("")
    assert stand_in.chat_requests == []
    # The scheduled dreams write no audit entries.
    assert AuditEntry.objects.filter(company__in=[company, other]).count() == audits


# --- skill evolver -------------------------------------------------------------------------


def evolver_company():
    company = CompanyFactory()
    company_config_set(
        company=company,
        data={"memory": {"procedural": {"model": "model-b", "evolver": {"enabled": True}}}},
    )
    return company


def pending_draft(company, *, due):
    now = timezone.now()
    report = EvolverReport.objects.create(
        company=company,
        trigger="schedule",
        started_at=now,
        finished_at=now,
        window_start=now - timedelta(days=7),
        window_end=now,
        status="completed",
    )
    return DraftFailure.objects.create(
        company=company,
        pattern=f"deploy:timeout:{company.pk}",
        report=report,
        status="pending",
        attempts=1,
        next_attempt_at=due,
        reason="llm_error: down",
        created_at=now,
        updated_at=now,
    )


def test_the_draft_retry_schedule_gives_each_company_its_own_task(stand_in):
    company_a, company_b = evolver_company(), evolver_company()
    due = timezone.now() - timedelta(seconds=1)
    drafts = [pending_draft(company, due=due) for company in (company_a, company_b)]
    OrmQ.objects.all().delete()

    assert jobs_dispatch_kind("evolver.draft") == {
        "reclaimed": 0,
        "companies": sorted([company_a.pk, company_b.pk]),
    }

    queued = [(row.key, row.func(), row.task["args"]) for row in OrmQ.objects.order_by("id")]
    assert queued == [
        ("llm", COMPANY_TASK, ("evolver.draft", company_id))
        for company_id in sorted([company_a.pk, company_b.pk])
    ]
    # Nothing was drafted in the dispatching task.
    for draft in drafts:
        draft.refresh_from_db()
        assert (draft.status, draft.attempts) == ("pending", 1)
    assert stand_in.chat_requests == []


def test_a_company_draft_retry_skips_while_its_slot_is_held_elsewhere(stand_in):
    company = evolver_company()
    draft = pending_draft(company, due=timezone.now() - timedelta(seconds=1))
    with slot_held_elsewhere(company.pk):
        assert jobs_company("evolver.draft", company.pk) == {
            "reclaimed": 0,
            "retried": 0,
            "waiting": 1,
            "busy": True,
        }
        draft.refresh_from_db()
        assert (draft.status, draft.attempts) == ("pending", 1)  # not claimed, not charged

    # Free again: the draft is retried (its pattern has no reports: no longer eligible).
    assert jobs_company("evolver.draft", company.pk) == {
        "reclaimed": 0,
        "retried": 1,
        "waiting": 0,
        "busy": False,
    }
    draft.refresh_from_db()
    assert (draft.status, draft.attempts) == ("superseded", 2)


def test_a_scheduled_evolver_cycle_waits_for_its_turn_while_the_companys_slot_is_held(
    stand_in,
):
    """By design (issue 34): a busy slot no longer re-arms the cycle a minute later with no
    turn (a busy company's cycle could be skipped indefinitely); the cycle is a durable job
    that waits for its turn and the slot's holder serves it."""
    company, other = evolver_company(), evolver_company()
    audits = AuditEntry.objects.filter(company__in=[company, other]).count()
    deferred = SLOT_DEFERRED.format(limit=1)
    now = timezone.now()
    with slot_held_elsewhere(company.pk):
        cycle = evolver_cycle_scheduled(company=company, now=now)
        assert evolver_cycle_outcome(cycle) == "deferred"  # nothing ran, the worker is free
        # Another company's cycle is not held up by this company's busy slot.
        assert run_company_evolver(other.pk) == "completed"
        # A tick while it waits takes the same cycle: one open cycle per company.
        assert run_company_evolver(company.pk) == "deferred"
        cycle = EvolverCycle.objects.get(company=company)
        assert (cycle.status, cycle.attempts, cycle.reason, cycle.report_id) == (
            "queued", 0, deferred, None,
        )  # fmt: skip
        assert cycle.next_attempt_at == cycle.updated_at + SLOT_DEFER
        assert not EvolverReport.objects.filter(company=company).exists()
        assert not Schedule.objects.filter(name__startswith="skill-evolver-deferred").exists()
        later = cycle.next_attempt_at
        assert_waits_for_its_turn("evolver.cycle", company.pk, later=later)

    # Its turn: the draft retry batch that takes the company's slot serves the waiting
    # cycle in the same pass (oldest due first: the draft, then the cycle).
    draft = pending_draft(company, due=now - timedelta(seconds=1))
    summary = jobs_run_company(DRAFT_JOB, company_id=company.pk, now=later)
    assert (summary.retried, summary.waiting, summary.busy) == (1, 0, False)
    draft.refresh_from_db()
    assert draft.status == "superseded"
    cycle.refresh_from_db()
    assert (cycle.status, cycle.attempts, cycle.reason, cycle.next_attempt_at) == (
        "done", 1, "", None,
    )  # fmt: skip
    assert (cycle.report.status, cycle.report.trigger) == ("completed", "schedule")
    assert scheduled_history(cycle) == waited_twice(cycle.report.method)
    assert not JobTurn.objects.exists()
    done = EvolverCycle.objects.get(company=other)
    assert scheduled_history(done) == ran_at_once(done.report.method)
    # The cycles write no audit entries.
    assert AuditEntry.objects.filter(company__in=[company, other]).count() == audits


# --- operator commands: manage.py dream, manage.py run_skill_evolver -------------------------


def answering_while_probing_the_slot(company_id: int, answer: str, seen: list[bool]):
    """A stand-in answer that first records whether the company's slot was held while the
    LLM was asked."""

    def respond(_body: dict) -> str:
        seen.append(slot_taken_elsewhere(company_id))
        return answer

    return respond


def dreaming_agent(stand_in, company):
    """A persistent agent of ``company`` with a journal entry (so its dream asks the LLM)."""
    caller = make_agent_caller(company=company, memory_level="persistent")
    configure(company, extraction={"model": "model-b", "store_turns": False})
    stand_in.answer = json.dumps(FACTS)
    conversation = flush(caller.agent, ["Ana said billing deploys on Fridays."])
    assert extraction.conversation_extract(conversation=conversation, force=True).added == 1
    return caller.agent


DREAM = {"core_summary": "Billing deploys on Fridays.", "diary": "Learned the deploy day."}


def test_the_dream_command_skips_while_the_companys_slot_is_held(stand_in):
    stand_in.hanging_models = set()
    company = company_using("model-b")
    agent = dreaming_agent(stand_in, company)
    asked = len(stand_in.chat_requests)
    out = io.StringIO()
    with slot_held_elsewhere(company.pk):
        call_command("dream", company.slug, stdout=out, stderr=io.StringIO())  # exit 0
        call_command("dream", company.slug, "--agent", agent.name, stdout=out, stderr=io.StringIO())
    busy = (
        f"{company.slug}: skipped, nothing dreamed: every LLM slot of the company is busy "
        "(SYNTHORG_LLM_COMPANY_CONCURRENCY=1); run the command again later"
    )
    assert out.getvalue().splitlines() == [busy, busy]
    assert not DreamRun.objects.exists()
    assert len(stand_in.chat_requests) == asked

    seen: list[bool] = []
    stand_in.answer = answering_while_probing_the_slot(company.pk, json.dumps(DREAM), seen)
    out = io.StringIO()
    call_command("dream", company.slug, stdout=out, stderr=io.StringIO())
    [run] = DreamRun.objects.all()
    assert out.getvalue().splitlines() == [
        f"{agent.name}: succeeded (core memory {run.core_memory_id})"
    ]
    assert seen == [True]  # the LLM was asked while the command held the company's slot
    assert not slot_taken_elsewhere(company.pk)  # and released it


def test_the_evolver_command_skips_while_the_companys_slot_is_held(stand_in):
    stand_in.hanging_models = set()
    company = CompanyFactory()
    evolver = {"enabled": True, "min_confidence_for_org_promotion": 0.5}
    company_config_set(
        company=company,
        data={"memory": {"procedural": {"model": "model-b", "evolver": evolver}}},
    )
    for n in range(3):
        caller = make_agent_caller(company=company)
        body = {**FAILED_REPORT, "task_type": "deploy", "task_title": f"Deploy {n}"}
        execution_report_submit(agent=caller.agent, data=body, enqueue=False)
    out = io.StringIO()
    with slot_held_elsewhere(company.pk):
        call_command("run_skill_evolver", company.slug, stdout=out, stderr=io.StringIO())
    assert out.getvalue().splitlines() == [
        f"{company.slug}: skipped, no evolver cycle ran: every LLM slot of the company is "
        "busy (SYNTHORG_LLM_COMPANY_CONCURRENCY=1); run the command again later"
    ]
    assert not EvolverReport.objects.exists()
    assert not ApprovalItem.objects.exists()
    assert stand_in.chat_requests == []

    seen: list[bool] = []
    stand_in.answer = answering_while_probing_the_slot(company.pk, json.dumps(PROPOSAL), seen)
    out = io.StringIO()
    call_command("run_skill_evolver", company.slug, stdout=out, stderr=io.StringIO())
    report = EvolverReport.objects.get()
    assert (report.status, report.trigger, report.proposals_emitted) == ("completed", "command", 1)
    assert ApprovalItem.objects.count() == 1
    assert seen and set(seen) == {True}  # every LLM call ran under the command's slot
    assert not slot_taken_elsewhere(company.pk)
