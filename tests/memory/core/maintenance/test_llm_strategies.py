"""dual_mode and llm consolidation through the service, against a real local LLM server."""

import importlib.util

import pytest

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from tests.memory.core.maintenance.conftest import configure, seed
from tests.support.openai_server import (
    FakeOpenAIServer,
    ScriptedResponse,
    chat_completion_payload,
    error_payload,
)

pytestmark = pytest.mark.django_db

DUAL = {
    "strategy": "dual_mode",
    "group_threshold": 3,
    "archival": {
        "enabled": True,
        "age_threshold_days": 30,
        "dual_mode": {"enabled": True, "summarization_model": "tiny-summarizer"},
    },
}
DENSE = '{"service": "billing", "version": "2.4.%(i)d", "sha": "9f2c1e7a%(i)db"}'
SPARSE = "Talked with Maria about the onboarding survey; we agreed to shorten it (%(i)d)."


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer(chat_reply="Maria and the team agreed to shorten onboarding.") as server:
        settings.SYNTHORG_LLM = {
            "BASE_URL": server.base_url,
            "API_KEY": "sk-test",
            "MODEL": "default-model",
            "TIMEOUT": 5,
            "MAX_RETRIES": 1,
        }
        yield server


def test_dual_mode_routes_by_density(caller, now, llm):
    configure(caller.company, **DUAL)
    seed(caller.agent, 4, now=now, age_days=40, category="semantic", template=DENSE)
    seed(caller.agent, 4, now=now, age_days=40, category="episodic", template=SPARSE)

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    assert report.counts["consolidated"] == 6 and report.counts["summaries_created"] == 2
    summaries = {m.category: m for m in Memory.objects.filter(source="consolidation")}
    assert summaries["semantic"].content.startswith("[extractive] ")
    assert "\n- 9f2c1e7a1b\n" in summaries["semantic"].content
    assert summaries["episodic"].content == "Maria and the team agreed to shorten onboarding."
    modes = dict(ArchivedMemory.objects.values_list("category", "mode").distinct())
    assert modes == {"semantic": "extractive", "episodic": "abstractive"}
    assert {a.mode for a in report.consolidation.result.mode_assignments} == {
        "extractive",
        "abstractive",
    }
    # one LLM call (the sparse group), with the configured summarisation model and limits
    (request,) = llm.requests_to(llm.CHAT_COMPLETIONS)
    assert request.json()["model"] == "tiny-summarizer"
    assert request.json()["max_tokens"] == 200
    assert MaintenanceRun.objects.get(pk=report.run_id).details["summary_methods"] == {
        "extractive": 1,
        "llm": 1,
    }


def test_dual_mode_falls_back_to_truncation_when_the_llm_fails(caller, now, llm):
    configure(caller.company, **DUAL)
    seed(caller.agent, 3, now=now, age_days=40, template=SPARSE)
    llm.enqueue(
        llm.CHAT_COMPLETIONS,
        ScriptedResponse(status=503, json=error_payload("overloaded")),
        ScriptedResponse(status=503, json=error_payload("overloaded")),
    )
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded"
    summary = Memory.objects.get(source="consolidation")
    assert summary.content.startswith("[")  # the truncated dated entries, not an LLM summary
    assert "shorten it (1)" in summary.content and "shorten it (0)" not in summary.content
    assert set(ArchivedMemory.objects.values_list("mode", flat=True)) == {"extractive"}


def test_llm_strategy_synthesises_per_group(caller, now, llm):
    configure(
        caller.company,
        strategy="llm",
        archival={"enabled": True, "age_threshold_days": 30},
        llm={"max_summary_tokens": 300, "temperature": 0.1},
    )
    seed(caller.agent, 3, now=now, age_days=40, category="episodic")
    seed(caller.agent, 3, now=now, age_days=40, category="social")
    llm.enqueue(
        llm.CHAT_COMPLETIONS,
        ScriptedResponse(json=chat_completion_payload("Episodic synthesis.")),
        ScriptedResponse(json=chat_completion_payload("Social synthesis.")),
    )
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.counts["summaries_created"] == 2
    contents = dict(
        Memory.objects.filter(source="consolidation").values_list("category", "content")
    )
    assert contents == {"episodic": "Episodic synthesis.", "social": "Social synthesis."}
    bodies = [r.json() for r in llm.requests_to(llm.CHAT_COMPLETIONS)]
    assert [(b["model"], b["max_tokens"], b["temperature"]) for b in bodies] == [
        ("default-model", 300, 0.1)
    ] * 2


def test_llm_rejection_leaves_the_group_untouched_and_is_recorded(caller, now, llm):
    configure(caller.company, strategy="llm", archival={"age_threshold_days": 30})
    seed(caller.agent, 3, now=now, age_days=40)
    llm.enqueue(llm.CHAT_COMPLETIONS, ScriptedResponse(status=401, json=error_payload("bad key")))
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "partial"
    assert report.counts["consolidated"] == 0
    assert "LLMRequestError" in report.errors[0]
    assert Memory.objects.filter(agent=caller.agent).count() == 3
    assert MaintenanceRun.objects.get(pk=report.run_id).errors == report.errors


def test_unconfigured_llm_degrades_to_concatenation(caller, now, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": "", "API_KEY": "", "TIMEOUT": 5}
    configure(caller.company, strategy="llm", archival={"age_threshold_days": 30})
    seed(caller.agent, 3, now=now, age_days=40)
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded"
    summary = Memory.objects.get(source="consolidation")
    assert summary.content.startswith("Consolidated 2 memories:")


@pytest.mark.skipif(
    importlib.util.find_spec("persistence.services.costs") is None,
    reason="the cost ledger (persistence.services.costs) is not on this branch yet",
)
def test_llm_usage_is_written_to_the_cost_ledger(caller, now, llm):
    from persistence.models import CostRecord

    configure(caller.company, **DUAL)
    seed(caller.agent, 3, now=now, age_days=40, template=SPARSE)
    run_maintenance(agent=caller.agent, now=now)
    record = CostRecord.objects.get(company=caller.company)
    assert (record.agent_id, record.model, record.input_tokens, record.output_tokens) == (
        caller.agent.pk,
        "tiny-summarizer",
        10,
        5,
    )
