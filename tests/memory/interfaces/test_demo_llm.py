"""The demo's stand-in model (``memory/interfaces/demo_llm.py``, ``make demo``).

The real services talk to it over HTTP, configured as ``make demo`` configures them (and as
a user with a base URL only, for the model lookup): every product prompt gets an answer the
product accepts, recorded under the stand-in's name. Like a real provider it refuses an
unknown model (404) and a prompt it does not know (400); it binds loopback only; it does
not outlive the command it wraps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from memory.ingestion.models import DreamRun, ExtractedFact
from memory.ingestion.services.context import conversation_summary_refresh
from memory.ingestion.services.dream import agent_dream
from memory.ingestion.services.extraction import conversation_extract
from memory.interfaces.demo_llm import DIARY, MODEL_ID, STANDIN_TAG, DemoLLMServer
from memory.procedural.evolver.models import EvolverReport
from memory.procedural.evolver.services import skill_evolver_run
from memory.procedural.models import ProceduralLesson
from memory.procedural.rule_lessons import rule_lesson
from memory.procedural.services.capture import execution_report_capture, report_fields
from memory.procedural.services.reports import execution_report_submit
from orgmemory.models import ApprovalItem
from persistence.models import Agent, Company
from persistence.services.companies import company_config_set
from synthorg.health import llm_banner, llm_summary
from synthorg.llm.resolution import forget_discovered_models
from synthorg.llm.standin import DEMO_STANDIN_NOTE
from synthorg.text import clip
from tests.memory.core.maintenance.conftest import seed as seed_memories
from tests.memory.ingestion.conftest import flush
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _fresh_model_discovery():
    forget_discovered_models()
    yield
    forget_discovered_models()


@pytest.fixture(params=["demo", "base_url_only"])
def standin(request, settings):
    """The stand-in, configured as ``make demo`` does (base URL + its model, no key) or as a
    user with a base URL only (the model is the one ``GET /models`` lists)."""
    with DemoLLMServer() as server:
        model = MODEL_ID if request.param == "demo" else ""
        settings.SYNTHORG_LLM = {
            **settings.SYNTHORG_LLM,
            "BASE_URL": server.base_url,
            "MODEL": model,
            "API_KEY": "",
        }
        yield server


def test_a_capture_ends_captured_by_the_llm_path_under_the_standin_name(standin, caller):
    submitted = execution_report_submit(agent=caller.agent, data=FAILED_REPORT, enqueue=False)
    capture = execution_report_capture(report_id=submitted.report.pk)
    assert (capture.status, capture.reason) == ("captured", "")
    lesson = ProceduralLesson.objects.get(report=submitted.report)
    assert (lesson.method, lesson.proposer_model) == ("llm", MODEL_ID)
    # the rule lesson of the report, worded through the proposer; the evidence is the product's
    rule = rule_lesson(report_fields(submitted.report), path="failure")
    assert (lesson.discovery, lesson.action, lesson.advice) == (
        rule.discovery,
        rule.action,
        rule.advice,
    )
    assert lesson.rationale == (
        f"Worded by the {MODEL_ID} stand-in (not a real model) from the report's fields. "
        "Evidence: 1 execution report (1 failed); task type 'deploy'; error category 'timeout'; "
        f"failing tool `helm_upgrade`; 2 retries; reported {submitted.report.created_at:%Y-%m-%d}."
    )
    assert STANDIN_TAG in lesson.memory.tags


def test_an_evolver_cycle_emits_an_approval_item_drafted_by_the_standin(standin, caller):
    company = caller.company
    company_config_set(
        company=company,
        data={
            "memory": {
                "procedural": {
                    "evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.7}
                }
            }
        },
    )
    for agent in [AgentFactory(company=company) for _ in range(3)]:
        execution_report_submit(agent=agent, data=FAILED_REPORT, enqueue=False)
    report = skill_evolver_run(company=company)
    assert (report.status, report.method, report.drafts_failed, report.proposals_emitted) == (
        "completed",
        "llm",
        0,
        1,
    )
    [item] = ApprovalItem.objects.filter(company=company, source="skill_evolver")
    assert item.status == "pending" and item.metadata["method"] == "llm"
    proposal = item.metadata["proposal"]
    assert proposal["condition"] == (
        "a 'deploy' task meets a 'timeout' error in `helm_upgrade` "
        "(helm upgrade timed out after 300s)."
    )
    assert proposal["rationale"].startswith(
        "Worded by the stand-in. 3 of 3 reports support this advice. Evidence: 3 execution "
        "reports of 3 agents ("
    )
    assert item.title == clip(f"Org skill: {proposal['discovery']}", 200)


def test_an_extraction_run_succeeds_with_the_turns_as_facts(standin, caller):
    # only the LLM's facts (with store_turns, the default, the stand-in's facts would be
    # near duplicates of the turns stored first, and skipped)
    company_config_set(
        company=caller.company, data={"memory": {"extraction": {"store_turns": False}}}
    )
    conversation = flush(
        caller.agent,
        ["Can you deploy billing today?", "Staging uses the eu-1 cluster and its own database."],
    )
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.status, run.method, run.model, run.error) == ("succeeded", "llm", MODEL_ID, "")
    assert run.added == 1  # the question is skipped
    [fact] = ExtractedFact.objects.filter(run=run)
    memory = Memory.objects.get(pk=fact.memory_id)
    assert memory.content == "Staging uses the eu-1 cluster and its own database."
    assert (memory.category, sorted(memory.tags)) == ("episodic", sorted([STANDIN_TAG, "user"]))


def test_a_dream_run_succeeds_with_the_extractive_core(standin, caller):
    conversation = flush(caller.agent, ["The billing release moved to Tuesdays at 10:00 UTC."])
    assert conversation_extract(conversation=conversation, force=True).status == "succeeded"
    run = agent_dream(agent=caller.agent)
    assert (run.status, run.method, run.model, run.error) == ("succeeded", "llm", MODEL_ID, "")
    assert run.diary == DIARY
    core = Memory.objects.get(pk=run.core_memory_id)
    assert "The billing release moved to Tuesdays at 10:00 UTC." in core.content


def test_summaries_and_search_and_ask_take_the_llm_path(standin, caller):
    company_config_set(
        company=caller.company,
        data={
            "memory": {
                "conversation": {"summary_threshold_tokens": 50},
                "consolidation": {"strategy": "llm", "archival": {"age_threshold_days": 30}},
                "retrieval": {"strategy": "tool_based", "query_reformulation_enabled": True},
            }
        },
    )
    words = "the onboarding survey is long and we discussed shortening it again " * 4
    conversation = flush(caller.agent, [f"{words} ({i})" for i in range(4)])
    assert conversation_summary_refresh(conversation=conversation)
    conversation.refresh_from_db()
    assert (conversation.summary_method, conversation.summary_error) == ("llm", "")
    assert conversation.summary.startswith("[extractive]")

    now = timezone.now()
    seed_memories(caller.agent, 3, now=now, age_days=40, template="Talked with Maria (%(i)d).")
    report = run_maintenance(agent=caller.agent, now=now)
    assert (set(report.consolidation.methods), report.errors) == ({"llm"}, [])

    response = caller.client.post(
        "/api/v1/memories/tools/call",
        {"name": "search_memory", "arguments": {"query": "onboarding survey", "limit": 5}},
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    # the stand-in finds what was found sufficient: one query, nothing degraded
    assert (data["queries"], data["degraded"]) == (["onboarding survey"], [])


def test_an_unknown_model_is_404_and_an_unknown_prompt_is_400_like_a_real_provider():
    with DemoLLMServer() as server:
        models = httpx.get(f"{server.base_url}/models").json()
        assert [m["id"] for m in models["data"]] == [MODEL_ID]
        assert "not a real model" in models["data"][0]["owned_by"]

        def ask(model, system="You are helpful."):
            return httpx.post(
                f"{server.base_url}/chat/completions",
                json={"model": model, "messages": [{"role": "system", "content": system}]},
            )

        unknown = ask("gpt-4o-mini")
        assert unknown.status_code == 404
        assert unknown.json() == {
            "error": {
                "message": "The model `gpt-4o-mini` does not exist. This server serves only "
                "`synthorg-demo-standin` (demo stand-in, not a real model).",
                "type": "not_found_error",
                "param": None,
                "code": "model_not_found",
            }
        }
        task = ask(MODEL_ID)
        assert task.status_code == 400 and task.json()["error"]["code"] == "unknown_task"
        assert httpx.post(f"{server.base_url}/chat/completions", content=b"{").status_code == 400


def test_an_answer_longer_than_max_tokens_is_cut_with_finish_reason_length():
    from memory.prompting.llm_checks import SUFFICIENCY_SYSTEM

    with DemoLLMServer() as server:
        body = httpx.post(
            f"{server.base_url}/chat/completions",
            json={
                "model": MODEL_ID,
                "max_tokens": 2,
                "messages": [
                    {"role": "system", "content": SUFFICIENCY_SYSTEM},
                    {"role": "user", "content": "Question: q"},
                ],
            },
        ).json()
    assert body["model"] == MODEL_ID and "not a real model" in body["system_fingerprint"]
    assert body["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": '{"suffic'},
        "finish_reason": "length",
    }


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_it_refuses_to_bind_anything_but_loopback(host):
    with pytest.raises(ValueError, match="loopback addresses only"):
        DemoLLMServer(host=host)
    with pytest.raises(CommandError, match="loopback addresses only"):
        call_command("demo_llm", "--host", host, "--", "true")


def test_the_command_runs_its_command_against_the_standin_and_stops_with_it(capfd):
    probe = (
        "import os, sys, httpx; url = os.environ['SYNTHORG_LLM_BASE_URL']; "
        "print('MODEL', os.environ['SYNTHORG_LLM_MODEL'], 'KEY', repr(os.environ["
        "'SYNTHORG_LLM_API_KEY'])); print('LISTED', httpx.get(url + '/models').json()"
        "['data'][0]['id']); sys.exit(3)"
    )
    with pytest.raises(CommandError) as raised:
        call_command("demo_llm", "--", sys.executable, "-c", probe)
    assert raised.value.returncode == 3
    out = capfd.readouterr().out
    assert f"MODEL {MODEL_ID} KEY ''" in out and f"LISTED {MODEL_ID}" in out
    base = next(line.split()[-1] for line in out.splitlines() if line.startswith("LLM stand-in"))
    with pytest.raises(httpx.ConnectError):  # stopped with its command
        httpx.get(f"{base}/models")


def test_seed_demo_with_the_standin_learns_through_the_llm_paths(settings, capsys):
    with DemoLLMServer() as server:
        settings.SYNTHORG_LLM = {
            **settings.SYNTHORG_LLM,
            "BASE_URL": server.base_url,
            "MODEL": MODEL_ID,
            "API_KEY": "",
        }
        call_command("seed_demo", port=8391)
        company = Company.objects.get(slug="demo-fleet")
        lessons = ProceduralLesson.objects.filter(company=company)
        assert {(lesson.method, lesson.proposer_model) for lesson in lessons} == {("llm", MODEL_ID)}
        assert lessons.count() == 3
        [item] = ApprovalItem.objects.filter(company=company)
        assert item.status == "pending" and item.metadata["method"] == "llm"
        assert EvolverReport.objects.get(company=company).method == "llm"
        planner = Agent.objects.get(company=company, name="planner")
        # the turns are stored verbatim first (store_turns); the stand-in's facts from them
        # are near duplicates, so the turn itself is what is remembered
        remembered = set(Memory.objects.filter(agent=planner).values_list("content", flat=True))
        assert "Remember that staging uses the eu-1 cluster and its own database." in remembered
        dream = DreamRun.objects.get(agent=planner)
        assert (dream.status, dream.model) == ("succeeded", MODEL_ID)
        out = capsys.readouterr().out
        assert "1 approval item(s) pending" in out
        assert f"LLM: {MODEL_ID}, demo stand-in, not a real model" in out
        assert "http://127.0.0.1:8391/api/v1/memories/context" in out


def test_healthz_says_the_standin_is_not_a_real_model(settings):
    settings.SYNTHORG_LLM = {
        **settings.SYNTHORG_LLM,
        "BASE_URL": "http://127.0.0.1:9/v1",
        "MODEL": MODEL_ID,
    }
    expected = {
        "ok": True,
        "configured": True,
        "model": MODEL_ID,
        "standin": True,
        "note": DEMO_STANDIN_NOTE,
    }
    assert llm_summary() == expected
    assert Client().get("/healthz").json()["checks"]["llm"] == expected
    assert llm_banner() == (f"LLM: {MODEL_ID}, {DEMO_STANDIN_NOTE}.", True)
    assert DEMO_STANDIN_NOTE.startswith("demo stand-in, not a real model")


@pytest.mark.parametrize(
    ("env", "under_standin"),
    [
        ({}, True),
        ({"DEMO_LLM": "none"}, False),
        ({"SYNTHORG_LLM_BASE_URL": "https://llm.example/v1"}, False),
    ],
)
def test_make_demo_runs_seed_and_serve_under_the_standin_unless_told_otherwise(env, under_standin):
    # as a user's shell would run it: not as a sub-make of ``make test`` (MAKELEVEL/MAKEFLAGS
    # would make it print "Entering/Leaving directory" lines)
    ignored = ("DEMO_LLM", "SYNTHORG_LLM_BASE_URL", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")
    clean = {k: v for k, v in os.environ.items() if k not in ignored}
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "demo", "PORT=8391"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    seed_and_serve = (
        "sh -c '.venv/bin/python manage.py seed_demo --port 8391 && "
        "exec .venv/bin/python manage.py serve --port 8391'"
    )
    expected = (
        f".venv/bin/python manage.py demo_llm -- {seed_and_serve}"
        if under_standin
        else seed_and_serve
    )
    assert dry[-1] == expected


def test_make_demo_refuses_an_unknown_demo_llm():
    done = subprocess.run(
        ["make", "demo", "DEMO_LLM=gpt"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "DEMO_LLM must be standin (the default) or none, not 'gpt'" in done.stdout
