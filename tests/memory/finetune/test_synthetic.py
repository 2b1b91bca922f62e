"""The seeds' synthetic queries as fine-tune pairs: with an LLM configured, a run first asks
it (on the LLM cluster, through the strict OpenAI-wire stand-in) for questions per memory,
redacted memory text in, then trains on them with the mined pairs. Failures degrade, counted
in the run's figures; the run still trains. Busy LLM slots make the run wait for its turn."""

from __future__ import annotations

import json
import re

import pytest
from django_q.models import OrmQ

from memory.core.models import Memory
from memory.finetune.models import FineTuneRun, FineTuneRunStatusChange
from memory.finetune.services import fine_tune_execute, fine_tune_synthesize
from memory.finetune.synthetic import SCHEMA
from persistence.models import AuditEntry
from synthorg.jobs.dispatch import COMPANY_TASK, SLOT_DEFERRED, jobs_serve_turns
from synthorg.jobs.models import JobTurn
from synthorg.jobs.services import SLOT_DEFER
from synthorg.jobs.tasks import jobs_company, jobs_dispatch_kind
from synthorg.llm.resolution import forget_discovered_models
from synthorg.llm.slots import company_llm_slot
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn
from tests.support.llm_slots import slot_held_elsewhere

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/api/v1/memory/fine-tune"
MEMORIES = 40
SECRET = "sk-abcdef0123456789abcdef"


def questions(body: dict) -> str:
    """A competent model: for memory "turn <n>", the fixture's query "q:<n>" and the
    document's own text "d:<n>" (both embeddable by the fixture's embedder)."""
    sent = json.loads(body["messages"][1]["content"])["memories"]
    return json.dumps(
        {
            "memories": [
                {"id": m["id"], "questions": [f"q:{n}", f"d:{n}", f"q:{n}"]}
                for m in sent
                for n in [int(re.match(r"turn (\d+)", m["memory"]).group(1))]
            ]
        }
    )


@pytest.fixture
def setup(caller, tmp_path, settings):
    from rest_framework.test import APIClient

    docs, queries = crafted(MEMORIES)
    store_pairs(caller.agent, docs)
    first = Memory.objects.get(agent=caller.agent, context="q:0")
    first.content = f"turn 0 token={SECRET}"
    first.save(update_fields=["content"])
    enable(caller.company, tmp_path, settings, min_gain=0.0)
    membership = MembershipFactory(company=caller.company, role="admin")
    client = APIClient()
    client.force_login(membership.user)
    forget_discovered_models()
    return caller, client, QueryEmbedder(queries, docs)


def start(client) -> str:
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def synthesized(client, embedder, llm, settings) -> FineTuneRun:
    """Start a run; its first task hands over to the LLM cluster; generate; return the row."""
    settings.SYNTHORG_LLM = llm.settings()
    run_id = start(client)
    llm_queue = OrmQ.objects.filter(key="llm").count()
    assert fine_tune_execute(run_id, embedder=embedder) == "synthesize"
    assert OrmQ.objects.filter(key="llm").count() == llm_queue + 1
    row = FineTuneRun.objects.get(pk=run_id)
    # Given back for the LLM cluster's task (not an attempt: the claim's count is returned).
    assert (row.status, row.epochs_done, row.synthetic_pairs, row.attempts) == (
        "planned", 0, [], 0,
    )  # fmt: skip
    trainer_queue = OrmQ.objects.exclude(key="llm").count()
    assert fine_tune_synthesize(run_id) == "continue"
    assert OrmQ.objects.exclude(key="llm").count() == trainer_queue + 1  # training queued
    return FineTuneRun.objects.get(pk=run_id)


def test_questions_per_memory_are_generated_redacted_then_trained_on(setup, settings):
    caller, client, embedder = setup
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        row = synthesized(client, embedder, llm, settings)
        bodies = [r.json() for r in llm.chat_requests]
    assert row.figures["synthetic"] == {
        "method": "llm", "memories": MEMORIES, "answered": MEMORIES,
        "generated": 2 * MEMORIES, "calls": 5, "model": "gpt-4o-mini", "skipped": {},
        "redactions": {"sk_key": 1},
    }  # fmt: skip
    # Two distinct questions per memory (the repeated third is dropped: the knob's 2).
    memory_of = {m.context: str(m.pk) for m in Memory.objects.filter(agent=caller.agent)}
    assert sorted(map(tuple, row.synthetic_pairs)) == sorted(
        (f"{kind}:{n}", memory_of[f"q:{n}"]) for n in range(MEMORIES) for kind in "qd"
    )
    # What left the server: redacted memory text, the strict schema, the resolved model.
    sent = "".join(b["messages"][1]["content"] for b in bodies)
    assert SECRET not in sent and "turn 0 token=[REDACTED:sk_key]" in sent
    assert {b["model"] for b in bodies} == {"gpt-4o-mini"}
    assert {json.dumps(b["response_format"], sort_keys=True) for b in bodies} == {
        json.dumps(
            {"type": "json_schema", "json_schema": {
                "name": "synthetic_queries", "strict": True, "schema": SCHEMA}},
            sort_keys=True,
        )
    }  # fmt: skip
    assert sum(len(json.loads(b["messages"][1]["content"])["memories"]) for b in bodies) == 40
    assert "2 different short questions" in bodies[0]["messages"][0]["content"]

    assert fine_tune_execute(row.pk, embedder=embedder) == "promoted"
    figures = FineTuneRun.objects.get(pk=row.pk).figures
    assert figures["pairs"] == {
        "turn": MEMORIES, "lesson": 0, "extracted": 0, "org_fact": 0, "labelled": 0,
        "synthetic": 2 * MEMORIES,
    }  # fmt: skip
    assert figures["train_pairs"] + figures["held_out_pairs"] == 3 * MEMORIES
    assert figures["synthetic"]["generated"] == 2 * MEMORIES  # kept with the final figures


def test_a_fenced_answer_is_read(setup, settings):
    _caller, client, embedder = setup

    def fenced(body):
        return f"Sure! Here you go:\n```json\n{questions(body)}\n```"

    with LLMProviderStandIn(PROFILES["ollama"], answer=fenced) as llm:
        row = synthesized(client, embedder, llm, settings)
    assert row.figures["synthetic"]["generated"] == 2 * MEMORIES
    assert row.figures["synthetic"]["skipped"] == {}


def test_a_server_error_skips_the_synthetic_pairs_and_the_run_trains_on_the_others(setup, settings):
    _caller, client, embedder = setup
    with LLMProviderStandIn(PROFILES["vllm"], answer=questions) as llm:
        llm.fault = Fault.SERVER_ERROR
        row = synthesized(client, embedder, llm, settings)
    synthetic = row.figures["synthetic"]
    # Two failed batches in a row: every remaining memory is skipped without another call.
    assert (synthetic["calls"], synthetic["generated"], synthetic["answered"]) == (2, 0, 0)
    assert synthetic["skipped"] == {"llm_unavailable": MEMORIES}
    assert row.synthetic_pairs == []
    assert fine_tune_execute(row.pk, embedder=embedder) == "promoted"
    figures = FineTuneRun.objects.get(pk=row.pk).figures
    assert figures["pairs"]["synthetic"] == 0 and figures["pairs"]["turn"] == MEMORIES


def test_an_unknown_model_is_refused_once_and_the_rest_skipped(setup, settings):
    _caller, client, embedder = setup
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        settings.SYNTHORG_LLM = llm.settings(MODEL="no-such-model")
        run_id = start(client)
        assert fine_tune_execute(run_id, embedder=embedder) == "synthesize"
        assert fine_tune_synthesize(run_id) == "continue"
        assert len(llm.chat_requests) == 1
    synthetic = FineTuneRun.objects.get(pk=run_id).figures["synthetic"]
    assert (synthetic["calls"], synthetic["generated"]) == (1, 0)
    assert synthetic["skipped"] == {"llm_refused": MEMORIES}
    assert fine_tune_execute(run_id, embedder=embedder) == "promoted"


def test_an_answer_that_is_not_the_object_skips_its_batch(setup, settings):
    _caller, client, embedder = setup
    answers = iter(["I cannot help with that."])

    def first_refuses(body):
        return next(answers, None) or questions(body)

    with LLMProviderStandIn(PROFILES["openai"], answer=first_refuses) as llm:
        row = synthesized(client, embedder, llm, settings)
    synthetic = row.figures["synthetic"]
    assert synthetic["skipped"] == {"invalid_answer": 8}
    assert (synthetic["calls"], synthetic["answered"]) == (5, MEMORIES - 8)
    assert synthetic["generated"] == 2 * (MEMORIES - 8)


def test_the_knobs_bound_the_memories_and_questions_and_zero_disables(setup, settings, tmp_path):
    caller, client, embedder = setup
    enable(caller.company, tmp_path, settings, min_gain=0.0, synthetic_queries_per_memory=1,
           max_synthetic_memories=10)  # fmt: skip
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        row = synthesized(client, embedder, llm, settings)
        assert (
            "1 different short questions" in llm.chat_requests[0].json()["messages"][0]["content"]
        )
    synthetic = row.figures["synthetic"]
    assert (synthetic["memories"], synthetic["generated"], synthetic["calls"]) == (10, 10, 2)
    assert {q[:2] for q, _ in row.synthetic_pairs} == {"q:"}  # the first question only
    assert fine_tune_execute(row.pk, embedder=embedder) == "promoted"

    for knob in ("synthetic_queries_per_memory", "max_synthetic_memories"):
        enable(caller.company, tmp_path, settings, min_gain=0.0, **{knob: 0})
        with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
            settings.SYNTHORG_LLM = llm.settings()
            run_id = start(client)
            # No hand-over to the LLM cluster: the run trains at once, nothing asked.
            assert fine_tune_execute(run_id, embedder=embedder) == "promoted"
            assert llm.chat_requests == []
        assert "synthetic" not in FineTuneRun.objects.get(pk=run_id).figures


def test_generation_stops_at_its_time_budget_and_the_rest_is_skipped(setup, settings):
    _caller, client, embedder = setup
    reads = iter(range(0, 100_000, 300))  # every clock read is 300 s after the previous one
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        run_id = start(client)
        assert fine_tune_execute(run_id, embedder=embedder) == "synthesize"
        assert fine_tune_synthesize(run_id, clock=lambda: next(reads)) == "continue"
    synthetic = FineTuneRun.objects.get(pk=run_id).figures["synthetic"]
    # Started at 0; the first batch starts at 300 s (< 420), the second would at 600 s.
    assert (synthetic["calls"], synthetic["answered"], synthetic["generated"]) == (1, 8, 16)
    assert synthetic["skipped"] == {"time_budget": MEMORIES - 8}
    assert fine_tune_execute(run_id, embedder=embedder) == "promoted"


def test_a_run_cancelled_before_its_generation_asks_nothing(setup, settings):
    _caller, client, embedder = setup
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        run_id = start(client)
        assert fine_tune_execute(run_id, embedder=embedder) == "synthesize"
        response = client.post(
            f"{BASE}/runs/{run_id}/cancel", {"confirm": True, "reason": "wrong data"},
            format="json",
        )  # fmt: skip
        assert response.status_code == 200, response.json()
        assert fine_tune_synthesize(run_id) == "cancelled"
        assert llm.chat_requests == []
    row = FineTuneRun.objects.get(pk=run_id)
    assert (row.status, row.synthetic_pairs, "synthetic" in row.figures) == (
        "cancelled",
        [],
        False,
    )


def history(run_id) -> list[tuple[str, str, int]]:
    return list(
        FineTuneRunStatusChange.objects.filter(run_id=run_id)
        .order_by("id")
        .values_list("status", "reason", "attempt")
    )


def test_a_busy_llm_slot_makes_the_run_wait_for_its_turn_then_it_trains_on_the_queries(
    setup, settings
):
    """By design (issue 34): a busy slot no longer skips the generation (``llm_busy``) and
    trains without the synthetic queries; the run waits for its turn, visibly."""
    caller, client, embedder = setup
    company = caller.company
    other = CompanyFactory()  # another company's busy slot holds up nothing here
    deferred = SLOT_DEFERRED.format(limit=1)
    with LLMProviderStandIn(PROFILES["openai"], answer=questions) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        run_id = start(client)
        assert fine_tune_execute(run_id, embedder=embedder) == "synthesize"
        with slot_held_elsewhere(other.pk):
            with slot_held_elsewhere(company.pk):
                assert fine_tune_synthesize(run_id) == "waiting"
                assert llm.chat_requests == []
            row = FineTuneRun.objects.get(pk=run_id)
            # Waiting, visibly: planned with the kernel's deferral reason, not an attempt, no
            # synthetic queries and no figures of a generation; its turn is recorded.
            assert (row.status, row.attempts, row.reason, row.synthetic_pairs) == (
                "planned", 0, deferred, [],
            )  # fmt: skip
            assert "synthetic" not in row.figures
            assert row.next_attempt_at == row.updated_at + SLOT_DEFER
            shown = client.get(f"{BASE}/runs/{run_id}").json()
            assert (shown["status"], shown["error"]) == ("planned", deferred)
            assert list(JobTurn.objects.values_list("company_id", "kind")) == [
                (company.pk, "finetune.synthesis")
            ]
            later = row.next_attempt_at
            # The training's dispatch leaves it alone: it does not train without them.
            assert jobs_company("finetune.run", company.pk, now=later)["retried"] == 0
            # The synthesis's own schedule hands its company a task on the LLM cluster.
            OrmQ.objects.all().delete()
            assert jobs_dispatch_kind("finetune.synthesis", now=later) == {
                "reclaimed": 0,
                "companies": [company.pk],
            }
            assert [(row.key, row.func(), row.task["args"]) for row in OrmQ.objects.all()] == [
                ("llm", COMPANY_TASK, ("finetune.synthesis", company.pk))
            ]
            assert jobs_dispatch_kind("finetune.run", now=later)["companies"] == []
            trainer_queue = OrmQ.objects.exclude(key="llm").count()
            # Its turn: whoever holds one of the company's slots serves it in its pass.
            with company_llm_slot(company.pk) as slot:
                assert slot
                assert jobs_serve_turns(company.pk, now=later) == 1
            assert OrmQ.objects.exclude(key="llm").count() == trainer_queue + 1  # training
        assert len(llm.chat_requests) == 5
    row = FineTuneRun.objects.get(pk=run_id)
    assert (row.status, row.attempts, row.reason, len(row.synthetic_pairs)) == (
        "planned", 0, "", 2 * MEMORIES,
    )  # fmt: skip
    synthetic = row.figures["synthetic"]
    assert (synthetic["calls"], synthetic["generated"], synthetic["skipped"]) == (
        5, 2 * MEMORIES, {},
    )  # fmt: skip
    assert not JobTurn.objects.exists()
    handed_over = "synthesize: the synthetic queries come first, on the LLM cluster"
    saved = "trained next: the synthetic queries are saved"
    assert history(run_id) == [
        ("planned", "", 0),  # started
        ("running", "", 1),  # the training's first task
        ("planned", handed_over, 0),
        ("running", "", 1),  # the synthesis task: every slot taken
        ("planned", deferred, 0),
        ("running", "", 1),  # its turn
        ("planned", saved, 0),
    ]
    assert fine_tune_execute(run_id, embedder=embedder) == "promoted"
    figures = FineTuneRun.objects.get(pk=run_id).figures
    assert figures["pairs"]["synthetic"] == 2 * MEMORIES
    assert list(
        AuditEntry.objects.filter(target_id=str(run_id))
        .order_by("id")
        .values_list("company_id", "action_type")
    ) == [
        (company.pk, "memory.fine_tune.started"),
        (company.pk, "memory.fine_tune.promoted"),
    ]
