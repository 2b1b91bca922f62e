"""The fine-tune lifecycle over /api/v1/memory/fine-tune/… (company admins) and its task body:
start, train, promote or not, crash, resume, cancel, rollback, delete; the guardrail triple;
501 for what this install does not support; isolation between companies."""

from __future__ import annotations

import hashlib
import threading
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.query_adapter import matrix_from_bytes
from memory.finetune.services import fine_tune_execute
from persistence.models import AuditEntry
from tests.conftest import make_agent_caller
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/api/v1/memory/fine-tune"
PAIRS = 120
#: Every pair source a preflight counts (the LLM's synthetic questions come during the run).
NO_PAIRS = {"turn": 0, "lesson": 0, "extracted": 0, "org_fact": 0, "labelled": 0}


def admin_client(company, role="admin") -> APIClient:
    membership = MembershipFactory(company=company, role=role)
    client = APIClient()
    client.force_login(membership.user)
    return client


@pytest.fixture
def setup(caller, tmp_path, settings):
    docs, queries = crafted(PAIRS)
    store_pairs(caller.agent, docs)
    enable(caller.company, tmp_path, settings)
    return caller, admin_client(caller.company), QueryEmbedder(queries, docs)


def start(client) -> dict:
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()


def test_a_run_trains_evaluates_and_activates_an_adapter_search_then_uses(setup, tmp_path):
    caller, client, embedder = setup
    run = start(client)
    assert (run["status"], run["epochs_done"], run["epochs_total"]) == ("planned", 0, 10)
    assert run["figures"] == {"pairs_available": {**NO_PAIRS, "turn": PAIRS}}

    assert fine_tune_execute(run["id"], embedder=embedder) == "promoted"
    body = client.get(f"{BASE}/runs/{run['id']}").json()
    figures = body["figures"]
    assert body["status"] == "promoted" and body["progress"] == 1.0
    assert figures["pairs"] == {
        "turn": PAIRS, "lesson": 0, "extracted": 0, "org_fact": 0, "labelled": 0, "synthetic": 0,
    }  # fmt: skip
    # No LLM configured: nothing asked, recorded as such.
    assert figures["synthetic"] == {
        "method": "none", "memories": 0, "answered": 0, "generated": 0, "calls": 0,
        "model": "", "skipped": {}, "redactions": {},
    }  # fmt: skip
    assert (figures["train_pairs"], figures["held_out_pairs"], figures["documents"]) == (
        90,
        30,
        120,
    )
    # The fixture's queries are built so the base model ranks badly; the adapter fixes it.
    assert figures["before"]["ndcg@10"] < 0.5 < figures["after"]["ndcg@10"]
    assert figures["after"]["recall@10"] > figures["before"]["recall@10"]
    assert figures["ndcg_gain"] >= figures["min_gain"] == 0.05
    assert figures["stopped_by"] == "epochs" and len(figures["losses"]) == 10
    assert figures["losses"][-1] < figures["losses"][0]

    checkpoint = AdapterCheckpoint.objects.get(company=caller.company)
    assert body["checkpoint"] == str(checkpoint.pk)
    assert checkpoint.is_active and checkpoint.directory == "adapters"
    data = (tmp_path / str(caller.company.pk) / "adapters" / checkpoint.file_name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == checkpoint.sha256
    assert matrix_from_bytes(data).shape == (384, 384)
    assert set(
        AuditEntry.objects.filter(
            company=caller.company, action_type__startswith="memory.fine_tune"
        ).values_list("action_type", flat=True)
    ) == {"memory.fine_tune.started", "memory.fine_tune.promoted"}

    # Search applies it and says so; another company's search is untouched.
    response = caller.client.post("/api/v1/memories/search", {"query": "turn"}, format="json")
    assert response.status_code == 200
    assert response.json()["adapter"] == str(checkpoint.pk)
    other = make_agent_caller(company=CompanyFactory())
    store_pairs(other.agent, crafted(5)[0])
    response = other.client.post("/api/v1/memories/search", {"query": "turn"}, format="json")
    assert "adapter" not in response.json() and response.json()["results"]
    assert client.get(f"{BASE}/active").json() == {
        "embedder_id": checkpoint.embedder_id, "dims": 384, "enabled": True,
        "checkpoint": str(checkpoint.pk), "applied": True,
    }  # fmt: skip


def test_the_adapter_moves_held_out_answers_up_in_the_search_statement(setup, tmp_path, settings):
    """What the search statement does with the transformed query: each pair's answer ranks
    higher than with the base query vector (same rows, same query, dense leg)."""
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from persistence.models import Agent

    caller, client, embedder = setup
    fine_tune_execute(start(client)["id"], embedder=embedder)

    def ranks(adapted: bool) -> list[int]:
        found = []
        agent = Agent.objects.select_related("company").get(pk=caller.agent.pk)
        for n in range(0, PAIRS, 6):
            query = MemoryQuery(text=f"q:{n}", limit=50)
            result = memory_search(agent=agent, query=query, embedder=embedder, legs=("dense",))
            assert (result.adapter is not None) is adapted
            order = [hit.memory.context for hit in result.hits]
            found.append(order.index(f"q:{n}") if f"q:{n}" in order else 50)
        return found

    adapted = ranks(True)
    enable(caller.company, tmp_path, settings, enabled=False)
    base = ranks(False)
    assert np.mean(adapted) < np.mean(base)


def test_margin_refuses_an_adapter_that_does_not_clear_it(setup, tmp_path, settings):
    caller, client, embedder = setup
    enable(caller.company, tmp_path, settings, min_gain=1.0)
    run = start(client)
    assert fine_tune_execute(run["id"], embedder=embedder) == "not_promoted"
    body = client.get(f"{BASE}/runs/{run['id']}").json()
    assert body["status"] == "not_promoted" and body["checkpoint"] is None
    assert body["figures"]["ndcg_gain"] < 1.0 and body["figures"]["after"]
    assert not AdapterCheckpoint.objects.exists()
    assert list((tmp_path / str(caller.company.pk) / "adapters").iterdir()) == []


def test_crash_then_resume_continues_from_the_saved_epoch_and_matches_an_uninterrupted_run(
    setup, tmp_path, settings
):
    caller, client, embedder = setup
    run = start(client)

    def crash(run_row):
        if _epochs(run_row) == 3:
            raise RuntimeError("worker lost")

    assert fine_tune_execute(run["id"], embedder=embedder, on_epoch=crash) == "failed"
    failed = FineTuneRun.objects.get(pk=run["id"])
    assert (failed.status, failed.epochs_done, failed.reason) == (
        "failed",
        3,
        "RuntimeError: worker lost",
    )
    assert failed.state is not None and failed.completed_at is not None
    assert client.get(f"{BASE}/runs/{run['id']}").json()["error"] == "RuntimeError: worker lost"

    response = client.post(f"{BASE}/runs/{run['id']}/resume", {}, format="json")
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["error"]) == ("planned", "")
    assert response.json()["finished_at"] is None
    assert fine_tune_execute(run["id"], embedder=embedder) == "promoted"
    resumed = AdapterCheckpoint.objects.get(company=caller.company)

    # The same data in another company, trained without interruption: the same matrix.
    twin = make_agent_caller(company=CompanyFactory())
    store_pairs(twin.agent, crafted(PAIRS)[0])
    enable(twin.company, tmp_path, settings)
    twin_run = start(admin_client(twin.company))
    assert fine_tune_execute(twin_run["id"], embedder=embedder) == "promoted"
    uninterrupted = AdapterCheckpoint.objects.get(company=twin.company)
    assert resumed.sha256 == uninterrupted.sha256


def _epochs(run_row) -> int:
    return FineTuneRun.objects.get(pk=run_row.pk).epochs_done


def test_cancel_while_running_stops_at_the_epoch_boundary_and_resume_finishes(setup):
    _caller, client, embedder = setup
    run = start(client)
    reached, release = threading.Event(), threading.Event()
    outcome = {}

    def pause_after_first_epoch(run_row):
        if not reached.is_set():
            reached.set()
            release.wait(timeout=60)

    def worker():
        from django.db import connection

        try:
            outcome["status"] = fine_tune_execute(
                run["id"], embedder=embedder, on_epoch=pause_after_first_epoch
            )
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    assert reached.wait(timeout=60)
    # The worker holds the run: it is not a crash, so it does not resume.
    response = client.post(f"{BASE}/runs/{run['id']}/resume", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "fine_tune_running")
    response = client.post(
        f"{BASE}/runs/{run['id']}/cancel", {"confirm": True, "reason": "wrong data"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    release.set()
    thread.join(timeout=60)
    assert outcome["status"] == "cancelled"
    cancelled = FineTuneRun.objects.get(pk=run["id"])
    assert (cancelled.status, cancelled.epochs_done) == ("cancelled", 1)
    entry = AuditEntry.objects.get(action_type="memory.fine_tune.cancelled")
    assert entry.details == {"reason": "wrong data", "via": "api", "from_status": "running"}

    assert client.post(f"{BASE}/runs/{run['id']}/resume", {}, format="json").status_code == 202
    assert fine_tune_execute(run["id"], embedder=embedder) == "promoted"
    assert FineTuneRun.objects.get(pk=run["id"]).epochs_done == 10


def test_a_running_run_whose_worker_died_resumes(setup):
    _caller, client, _embedder = setup
    run = start(client)
    gone = timezone.now() - timedelta(seconds=1)  # claimed by a worker whose lease has passed
    FineTuneRun.objects.filter(pk=run["id"]).update(status="running", claimed_until=gone)
    response = client.post(f"{BASE}/runs/{run['id']}/resume", {}, format="json")
    assert (response.status_code, response.json()["status"]) == (202, "planned")
    assert AuditEntry.objects.get(action_type="memory.fine_tune.resumed").details == {
        "from_status": "running", "epochs_done": 0, "via": "api",
    }  # fmt: skip


def test_one_run_in_flight_and_finished_runs_do_not_resume(setup):
    _caller, client, embedder = setup
    run = start(client)
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "fine_tune_in_flight")
    fine_tune_execute(run["id"], embedder=embedder)
    response = client.post(f"{BASE}/runs/{run['id']}/resume", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "fine_tune_not_resumable")
    response = client.post(
        f"{BASE}/runs/{run['id']}/cancel", {"confirm": True, "reason": "x"}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (409, "fine_tune_not_cancellable")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"reason": "because"}, "confirmation_required"),
        ({"confirm": "true", "reason": "because"}, "confirmation_required"),
        ({"confirm": 1, "reason": "because"}, "confirmation_required"),
        ({"confirm": True}, "reason_required"),
        ({"confirm": True, "reason": "   "}, "reason_required"),
    ],
)
def test_guardrail_triple_on_cancel_rollback_and_delete(setup, body, code):
    _caller, client, embedder = setup
    run = start(client)
    response = client.post(f"{BASE}/runs/{run['id']}/cancel", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, code)
    assert FineTuneRun.objects.get(pk=run["id"]).status == "planned"
    fine_tune_execute(run["id"], embedder=embedder)
    checkpoint = AdapterCheckpoint.objects.get()
    response = client.post(f"{BASE}/rollback", {"checkpoint": None, **body}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, code)
    response = client.delete(f"{BASE}/checkpoints/{checkpoint.pk}", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, code)
    assert AdapterCheckpoint.objects.get().is_active
    assert not AuditEntry.objects.filter(
        action_type__in=["memory.fine_tune.cancelled", "memory.fine_tune.rolled_back"]
    ).exists()


def test_only_company_admins(setup):
    caller, _client, _embedder = setup
    for who in (caller.client, admin_client(caller.company, role="operator")):
        response = who.post(f"{BASE}/runs", {}, format="json")
        assert response.status_code == 403
        assert who.get(f"{BASE}/runs").status_code == 403
    assert not FineTuneRun.objects.exists()


def test_rollback_to_base_and_back_then_delete(setup, tmp_path):
    caller, client, embedder = setup
    fine_tune_execute(start(client)["id"], embedder=embedder)
    first = AdapterCheckpoint.objects.get()
    fine_tune_execute(start(client)["id"], embedder=embedder)
    second = AdapterCheckpoint.objects.exclude(pk=first.pk).get()
    assert list(AdapterCheckpoint.objects.filter(is_active=True)) == [second]
    guard = {"confirm": True, "reason": "regression"}

    response = client.post(f"{BASE}/rollback", {"checkpoint": None, **guard}, format="json")
    assert response.status_code == 200
    assert response.json()["checkpoint"] is None and response.json()["applied"] is False
    assert not AdapterCheckpoint.objects.filter(is_active=True).exists()
    search = caller.client.post("/api/v1/memories/search", {"query": "turn"}, format="json")
    assert "adapter" not in search.json()

    response = client.post(
        f"{BASE}/rollback", {"checkpoint": str(first.pk), **guard}, format="json"
    )
    assert response.json()["checkpoint"] == str(first.pk)
    search = caller.client.post("/api/v1/memories/search", {"query": "turn"}, format="json")
    assert search.json()["adapter"] == str(first.pk)

    response = client.delete(f"{BASE}/checkpoints/{first.pk}", guard, format="json")
    assert (response.status_code, response.json()["code"]) == (409, "checkpoint_active")
    path = tmp_path / str(caller.company.pk) / "adapters" / second.file_name
    assert path.exists()
    response = client.delete(f"{BASE}/checkpoints/{second.pk}", guard, format="json")
    assert response.status_code == 204
    assert not path.exists()
    assert list(AdapterCheckpoint.objects.values_list("pk", flat=True)) == [first.pk]
    assert list(
        AuditEntry.objects.filter(action_type__startswith="memory.fine_tune.")
        .exclude(action_type__in=["memory.fine_tune.started", "memory.fine_tune.promoted"])
        .order_by("pk")
        .values_list("action_type", "target_id")
    ) == [
        ("memory.fine_tune.rolled_back", "base"),
        ("memory.fine_tune.rolled_back", str(first.pk)),
        ("memory.fine_tune.checkpoint_deleted", str(second.pk)),
    ]


def test_other_companies_runs_and_checkpoints_are_not_found(setup):
    _caller, client, embedder = setup
    run = start(client)
    fine_tune_execute(run["id"], embedder=embedder)
    checkpoint = AdapterCheckpoint.objects.get()
    stranger = admin_client(CompanyFactory())
    response = stranger.get(f"{BASE}/runs/{run['id']}")
    assert (response.status_code, response.json()["code"]) == (404, "fine_tune_run_not_found")
    assert stranger.get(f"{BASE}/runs").json() == {"count": 0, "results": []}
    assert stranger.get(f"{BASE}/checkpoints").json() == []
    guard = {"confirm": True, "reason": "x"}
    response = stranger.post(
        f"{BASE}/rollback", {"checkpoint": str(checkpoint.pk), **guard}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (404, "checkpoint_not_found")
    response = stranger.delete(f"{BASE}/checkpoints/{checkpoint.pk}", guard, format="json")
    assert (response.status_code, response.json()["code"]) == (404, "checkpoint_not_found")
    assert AdapterCheckpoint.objects.get().is_active


def test_training_reads_only_the_companys_rows(setup, tmp_path, settings):
    _caller, client, embedder = setup
    other = make_agent_caller(company=CompanyFactory())
    store_pairs(other.agent, crafted(PAIRS, seed=9)[0], offset=0)
    run = start(client)
    fine_tune_execute(run["id"], embedder=embedder)
    figures = FineTuneRun.objects.get(pk=run["id"]).figures
    assert figures["documents"] == PAIRS and figures["pairs"]["turn"] == PAIRS


def test_full_model_is_not_supported(setup):
    _caller, client, _embedder = setup
    for path in ("preflight", "runs"):
        response = client.post(f"{BASE}/{path}", {"method": "full_model"}, format="json")
        assert response.status_code == 501
        assert response.json()["code"] == "not_supported"
    assert not FineTuneRun.objects.exists()


def test_preflight_reports_and_start_refuses(setup, tmp_path, settings):
    caller, client, _embedder = setup
    enable(caller.company, tmp_path, settings, enabled=False)
    body = client.post(f"{BASE}/preflight", {}, format="json").json()
    assert body["ok"] is False
    # off, its other keys are refused at load: no checkpoint directory is configured either
    codes = ["fine_tune_disabled", "checkpoint_path_unusable"]
    assert [p["code"] for p in body["problems"]] == codes
    assert body["pairs"] == {**NO_PAIRS, "turn": PAIRS}
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (422, "fine_tune_disabled")
    enable(caller.company, tmp_path, settings, base_model="other-model")
    body = client.post(f"{BASE}/preflight", {}, format="json").json()
    assert [p["code"] for p in body["problems"]] == ["base_model_mismatch"]
    response = client.post(f"{BASE}/runs", {"epochs": 3}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, "validation_error")
    enable(caller.company, tmp_path, settings, min_pairs=PAIRS + 1)
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (422, "not_enough_pairs")
    assert not FineTuneRun.objects.exists()


def test_labelled_pairs_from_training_data_dir(setup, tmp_path, settings):
    import json

    caller, client, embedder = setup
    memory_ids = list(caller.agent.memories.order_by("context").values_list("id", "context")[:3])
    directory = tmp_path / str(caller.company.pk) / "labels"
    directory.mkdir(parents=True)
    lines = [json.dumps({"query": ctx, "memory_id": str(mid)}) for mid, ctx in memory_ids]
    stranger = make_agent_caller(company=CompanyFactory())
    foreign = store_pairs(stranger.agent, crafted(1)[0])[0]
    lines += [json.dumps({"query": "q:1", "memory_id": str(foreign.pk)}), "not json"]
    (directory / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    enable(caller.company, tmp_path, settings, training_data_dir="labels")
    run = start(client)
    assert run["figures"]["pairs_available"]["labelled"] == 4
    fine_tune_execute(run["id"], embedder=embedder)
    figures = FineTuneRun.objects.get(pk=run["id"]).figures
    assert figures["pairs"]["labelled"] == 3
    assert figures["skipped"] == {"labelled_unreadable": 1, "labelled_no_vector": 1}


@pytest.mark.parametrize(
    ("prefix", "status"),
    [("q", "promoted"), ("d", "not_promoted")],
)
def test_dev_questions_gate_promotion(setup, tmp_path, settings, prefix, status):
    """With ``evaluation_file``, the gain must also show on the company's own dev questions:
    ``d:`` questions the base model already answers perfectly leave no gain to show, so an
    adapter that helps the held-out pairs is still refused."""
    import json

    caller, client, embedder = setup
    by_context = dict(caller.agent.memories.values_list("context", "id"))
    lines = [
        json.dumps({"query": f"{prefix}:{n}", "memory_ids": [str(by_context[f"q:{n}"])]})
        for n in range(0, PAIRS, 4)
    ]
    lines.append(
        json.dumps({"query": "q:1", "memory_ids": ["00000000-0000-0000-0000-000000000000"]})
    )
    (tmp_path / str(caller.company.pk)).mkdir(exist_ok=True)
    (tmp_path / str(caller.company.pk) / "dev.jsonl").write_text("\n".join(lines))
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    run = start(client)
    assert fine_tune_execute(run["id"], embedder=embedder) == status
    figures = FineTuneRun.objects.get(pk=run["id"]).figures
    assert figures["ndcg_gain"] >= 0.05  # the held-out pairs gain either way
    assert (figures["dev"]["questions"], figures["dev"]["skipped"]) == (PAIRS // 4, 1)
    if status == "promoted":
        assert figures["dev"]["ndcg_gain"] >= 0.05
    else:
        assert figures["dev"]["before"]["ndcg@10"] == 1.0
        assert figures["dev"]["ndcg_gain"] < 0.05
        assert not AdapterCheckpoint.objects.exists()


def test_a_spent_task_budget_queues_a_continuation_after_each_saved_epoch(setup):
    from django_q.models import OrmQ

    _caller, client, embedder = setup
    run = start(client)
    queued = OrmQ.objects.count()
    assert fine_tune_execute(run["id"], embedder=embedder, task_budget=0) == "continue"
    assert OrmQ.objects.count() == queued + 1  # queued once the run was given back
    row = FineTuneRun.objects.get(pk=run["id"])
    assert (row.status, row.epochs_done, row.attempts) == ("planned", 1, 0)
    assert fine_tune_execute(run["id"], embedder=embedder, task_budget=0) == "continue"
    assert FineTuneRun.objects.get(pk=run["id"]).epochs_done == 2
    assert fine_tune_execute(run["id"], embedder=embedder) == "promoted"
    assert FineTuneRun.objects.get(pk=run["id"]).epochs_done == 10


def test_a_missing_checkpoint_file_degrades_search_to_the_base_vector(setup, tmp_path):
    from memory.finetune import selectors as finetune_selectors

    caller, client, embedder = setup
    fine_tune_execute(start(client)["id"], embedder=embedder)
    checkpoint = AdapterCheckpoint.objects.get()
    finetune_selectors._matrices.clear()
    (tmp_path / str(caller.company.pk) / "adapters" / checkpoint.file_name).unlink()
    response = caller.client.post("/api/v1/memories/search", {"query": "turn"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["degraded"] == ["adapter"] and "adapter" not in body and body["results"]


def test_an_embedder_too_wide_for_an_adapter_is_not_supported(setup, embedding_server):
    from persistence.services.companies import company_config_set

    caller, client, _embedder = setup
    config = caller.company.config
    config["memory"]["embedder"] = {
        "model": "wide", "dims": 1536, "base_url": embedding_server.base_url,
    }  # fmt: skip
    company_config_set(company=caller.company, data=config)
    response = client.post(f"{BASE}/preflight", {}, format="json")
    assert (response.status_code, response.json()["code"]) == (501, "not_supported")
    assert "1536" in response.json()["detail"]


def test_training_parameters_are_the_companys(setup, tmp_path, settings):
    """Each training knob, changed alone from one baseline, changes the run: the same
    config twice trains identically, so any difference is the knob's."""
    caller, client, embedder = setup
    baseline = {"epochs": 3, "min_gain": 0.0}

    def train(**overrides):
        enable(caller.company, tmp_path, settings, **{**baseline, **overrides})
        ticks = iter(range(1_000_000))  # a clock that advances one second per reading
        run = start(client)
        fine_tune_execute(
            run["id"], embedder=embedder, clock=lambda: float(next(ticks)), task_budget=1e9
        )
        return client.get(f"{BASE}/runs/{run['id']}").json()["figures"]

    first = train()
    assert train()["losses"] == first["losses"] and len(first["losses"]) == 3
    assert (first["stopped_by"], first["held_out_pairs"]) == ("epochs", 30)
    for knob, value in [
        ("learning_rate", 0.05),
        ("temperature", 0.2),
        ("hard_negatives", 2),
        ("seed", 7),
    ]:
        assert train(**{knob: value})["losses"] != first["losses"], knob
    assert len(train(epochs=2)["losses"]) == 2
    assert (train(held_out_share=0.5)["held_out_pairs"]) == 60
    assert train(max_training_seconds=3)["stopped_by"] == "time"
