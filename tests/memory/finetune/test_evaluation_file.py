"""``memory.fine_tune.evaluation_file``: preflight refuses a file the dev-question gate
could not use — missing, unreadable, not JSONL of ``{"query", "memory_ids"}``, or without one
question about the company's own memories — with a precise code, a start is refused with
it (422), a run whose file went bad meanwhile fails before training, and the gate never
passes on 0 questions."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.selectors import EVALUATION_FILE_SHAPE
from memory.finetune.services import fine_tune_execute
from tests.conftest import make_agent_caller
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "/api/v1/memory/fine-tune"
PAIRS = 120


@pytest.fixture
def setup(caller, tmp_path, settings):
    docs, queries = crafted(PAIRS)
    store_pairs(caller.agent, docs)
    enable(caller.company, tmp_path, settings)
    membership = MembershipFactory(company=caller.company, role="admin")
    client = APIClient()
    client.force_login(membership.user)
    (tmp_path / str(caller.company.pk)).mkdir(exist_ok=True)
    return caller, client, QueryEmbedder(queries, docs)


def write(tmp_path, caller, text: str, name: str = "dev.jsonl") -> None:
    (tmp_path / str(caller.company.pk) / name).write_text(text, encoding="utf-8")


def question(memory_id, query: str = "q:0") -> str:
    return json.dumps({"query": query, "memory_ids": [str(memory_id)]})


def refused(client, code: str, detail: str) -> None:
    """Preflight names the problem; a start is refused with it and creates no run."""
    body = client.post(f"{BASE}/preflight", {}, format="json").json()
    assert body["ok"] is False
    assert body["problems"] == [{"code": code, "detail": detail}]
    response = client.post(f"{BASE}/runs", {}, format="json")
    assert response.status_code == 422
    assert (response.json()["code"], response.json()["detail"]) == (code, detail)
    assert not FineTuneRun.objects.exists()


def test_a_missing_evaluation_file_is_refused(setup, tmp_path, settings):
    caller, client, _embedder = setup
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    refused(
        client,
        "evaluation_file_missing",
        "memory.fine_tune.evaluation_file 'dev.jsonl' does not exist in the company's server "
        "directory.",
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("query,memory_ids\nwhat?,abc\n", 1),  # a CSV file
        ('{"query": "q:0", "memory_ids": []}\n', 1),  # no memory
        ('\n{"query": "  ", "memory_ids": ["%(id)s"]}\n', 2),  # a blank query
        ('{"query": "q:0", "memory_ids": ["%(id)s"]}\n{"query": "q:1"}\n', 2),  # no ids
        ('{"query": "q:0", "memory_ids": ["not-a-uuid"]}\n', 1),
        ('["q:0", ["%(id)s"]]\n', 1),  # JSON, but not an object
    ],
)
def test_a_file_that_is_not_jsonl_of_dev_questions_is_refused_at_its_line(
    setup, tmp_path, settings, text, line
):
    caller, client, _embedder = setup
    memory_id = caller.agent.memories.values_list("id", flat=True).first()
    write(tmp_path, caller, text % {"id": memory_id})
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    refused(
        client,
        "evaluation_file_invalid",
        f"memory.fine_tune.evaluation_file 'dev.jsonl', line {line}: not a JSON object "
        f"{EVALUATION_FILE_SHAPE} (one dev question per line).",
    )


def test_an_unreadable_evaluation_file_is_refused(setup, tmp_path, settings):
    caller, client, _embedder = setup
    (tmp_path / str(caller.company.pk) / "dev").mkdir()  # a directory, not a file
    (tmp_path / str(caller.company.pk) / "latin.jsonl").write_bytes(b'{"query": "\xff"}\n')
    enable(caller.company, tmp_path, settings, evaluation_file="dev")
    refused(
        client,
        "evaluation_file_unreadable",
        "memory.fine_tune.evaluation_file 'dev' cannot be read: Is a directory.",
    )
    enable(caller.company, tmp_path, settings, evaluation_file="latin.jsonl")
    body = client.post(f"{BASE}/preflight", {}, format="json").json()
    assert [p["code"] for p in body["problems"]] == ["evaluation_file_unreadable"]


def test_a_file_without_a_question_about_the_companys_memories_is_refused(
    setup, tmp_path, settings
):
    """Empty, or naming only another company's memories (or none that exist): the gate would
    judge 0 questions."""
    caller, client, _embedder = setup
    other = make_agent_caller(company=CompanyFactory())
    foreign = store_pairs(other.agent, crafted(2)[0])[0]
    detail = (
        "memory.fine_tune.evaluation_file 'dev.jsonl' has no question whose memories are the "
        "company's live memories with a all-MiniLM-L6-v2-onnx-int8pc vector: the dev-question "
        "gate would judge 0 questions."
    )
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    for text in (
        "",
        "\n\n",
        question(foreign.pk),
        question("00000000-0000-0000-0000-000000000000"),
    ):
        write(tmp_path, caller, text)
        refused(client, "evaluation_file_no_questions", detail)


def test_a_usable_file_passes_preflight(setup, tmp_path, settings):
    caller, client, _embedder = setup
    memory_id = caller.agent.memories.values_list("id", flat=True).first()
    write(
        tmp_path,
        caller,
        question("00000000-0000-0000-0000-000000000000") + "\n" + question(memory_id),
    )
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    body = client.post(f"{BASE}/preflight", {}, format="json").json()
    assert (body["ok"], body["problems"]) == (True, [])


def test_a_file_that_went_bad_after_the_start_fails_the_run_before_training(
    setup, tmp_path, settings
):
    caller, client, embedder = setup
    memory_id = caller.agent.memories.values_list("id", flat=True).first()
    write(tmp_path, caller, question(memory_id))
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    run = client.post(f"{BASE}/runs", {}, format="json").json()
    (tmp_path / str(caller.company.pk) / "dev.jsonl").unlink()
    assert fine_tune_execute(run["id"], embedder=embedder) == "failed"
    row = FineTuneRun.objects.get(pk=run["id"])
    assert row.epochs_done == 0 and embedder.calls == []
    assert client.get(f"{BASE}/runs/{run['id']}").json()["error"] == (
        "RuntimeError: evaluation_file_missing: memory.fine_tune.evaluation_file 'dev.jsonl' "
        "does not exist in the company's server directory."
    )


def test_the_gate_never_passes_on_zero_dev_questions(setup, tmp_path, settings):
    """The file names a live memory of the company (preflight passes), but of an agent no
    training pair touches: no question is ranked, and an adapter that helps the held-out
    pairs is still refused."""
    caller, client, embedder = setup
    bystander = AgentFactory(company=caller.company)
    lone = store_pairs(bystander, crafted(1, seed=9)[0], offset=PAIRS)[0]
    type(lone).objects.filter(pk=lone.pk).update(context="")  # no pair of its own
    write(tmp_path, caller, question(lone.pk))
    enable(caller.company, tmp_path, settings, evaluation_file="dev.jsonl")
    run = client.post(f"{BASE}/runs", {}, format="json").json()
    assert fine_tune_execute(run["id"], embedder=embedder) == "not_promoted"
    figures = FineTuneRun.objects.get(pk=run["id"]).figures
    assert figures["ndcg_gain"] >= figures["min_gain"]  # the held-out pairs gain
    assert figures["dev"] == {"questions": 0, "skipped": 1, "ndcg_gain": None}
    assert not AdapterCheckpoint.objects.exists()
