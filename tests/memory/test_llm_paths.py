"""Every LLM path × every provider profile × every fault, against the strict stand-in.

Each call site is driven through its own service (Search-and-Ask through the HTTP tool
endpoint) with ``SYNTHORG_LLM`` set as a user sets it — a base URL and a key, no model —
and company configs at their defaults (``memory.procedural.model`` is the seeds'
placeholder). A path either produces its result or records a precise, user-visible status;
:data:`FAULT_OUTCOMES` is the table docs/operating/llm-providers.md publishes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.utils import timezone

from memory.core.consolidation.abstractive import SYSTEM_PROMPT as SUMMARISE_SYSTEM
from memory.core.services.maintenance import run_maintenance
from memory.finetune.synthetic import SYSTEM_PROMPT as SYNTHETIC_SYSTEM
from memory.finetune.synthetic import synthetic_queries_generate
from memory.ingestion.prompts import DREAM_SYSTEM, EXTRACTION_SYSTEM, SUMMARY_SYSTEM
from memory.ingestion.services.context import conversation_summary_refresh
from memory.ingestion.services.dream import agent_dream
from memory.ingestion.services.extraction import conversation_extract
from memory.procedural.evolver.drafting import SYSTEM_PROMPT as EVOLVER_SYSTEM
from memory.procedural.evolver.models import EvolverReport
from memory.procedural.evolver.services import skill_evolver_run
from memory.procedural.proposer import FAILURE_SYSTEM_PROMPT
from memory.procedural.services.capture import RULE_STANDS_IN, execution_report_capture
from memory.procedural.services.reports import execution_report_submit
from memory.prompting.llm_checks import REFORMULATION_SYSTEM, SUFFICIENCY_SYSTEM
from orgmemory.models import ApprovalItem
from persistence.selectors.embedder import company_embedder
from persistence.services.companies import company_config_set
from synthorg.llm import PLACEHOLDER_MODELS, is_placeholder
from synthorg.llm.resolution import forget_discovered_models
from tests.memory.core.maintenance.conftest import seed as seed_memories
from tests.memory.ingestion.conftest import fact, flush
from tests.memory.procedural.conftest import FAILED_REPORT, PROPOSAL
from tests.persistence.factories import AgentFactory
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn
from tests.support.openai_server import ScriptedResponse

pytestmark = pytest.mark.django_db

QUESTION = "when can billing ship?"
REFORMULATED = "billing deploy schedule"
CORE = "I work on billing; deploys are Fridays at noon UTC."
SUMMARY = "Maria and the team agreed to shorten the onboarding survey."
SPARSE = "Talked with Maria about the onboarding survey; we agreed to shorten it (%(i)d)."


def model_answer(body: dict) -> str:
    """What a competent model means to answer, by task (the profile decides the wire form)."""
    system = body["messages"][0]["content"]
    if system in (FAILURE_SYSTEM_PROMPT, EVOLVER_SYSTEM):
        return json.dumps(PROPOSAL)
    if system.startswith(EXTRACTION_SYSTEM[:60]):
        return json.dumps({"facts": [fact("Billing deploys every Friday at noon UTC.")]})
    if system.startswith(DREAM_SYSTEM[:60]):
        return json.dumps({"core_summary": CORE, "diary": "Learned the deploy day."})
    if system == SUFFICIENCY_SYSTEM:
        return json.dumps({"sufficient": False})
    if system == REFORMULATION_SYSTEM:
        return REFORMULATED
    if system in (SUMMARISE_SYSTEM,) or system.startswith(SUMMARY_SYSTEM[:60]):
        return SUMMARY
    if system.startswith(SYNTHETIC_SYSTEM[:60]):
        return json.dumps(
            {"memories": [{"id": 1, "questions": [QUESTION, "which day does billing deploy?"]}]}
        )
    raise AssertionError(f"unexpected prompt: {system[:80]!r}")


@dataclass(frozen=True)
class Outcome:
    status: str  # the status the path records (or "produced")
    detail: str  # the recorded reason / degraded flags


# --- the call sites ----------------------------------------------------------------------


def capture(llm, caller) -> Outcome:
    submitted = execution_report_submit(agent=caller.agent, data=FAILED_REPORT, enqueue=False)
    row = execution_report_capture(report_id=submitted.report.pk)
    # When the LLM's lesson cannot be had, the rule lesson stands in (never worse than no LLM)
    status = f"{row.status}:rule" if row.method == "rule" else row.status
    return Outcome(status, row.reason)


def evolver(llm, caller) -> Outcome:
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
    items = ApprovalItem.objects.filter(company=company, source="skill_evolver").count()
    if items:
        return Outcome("approval_item", report.error)
    return Outcome(f"{report.status}:drafts_failed={report.drafts_failed}", report.error)


def extraction(llm, caller) -> Outcome:
    conversation = flush(caller.agent, ["Ana said billing deploys move to Fridays at noon."])
    run = conversation_extract(conversation=conversation, force=True)
    return Outcome(run.status, run.error)


def dream(llm, caller) -> Outcome:
    fault, llm.fault = llm.fault, None  # the journal is written while the LLM is healthy
    extraction(llm, caller)
    llm.fault = fault
    forget_discovered_models()  # a model found while healthy would otherwise stay cached
    run = agent_dream(agent=caller.agent)
    return Outcome(run.status, run.error)


def _consolidate(caller, consolidation: dict) -> Outcome:
    now = timezone.now()
    company_config_set(company=caller.company, data={"memory": {"consolidation": consolidation}})
    seed_memories(caller.agent, 3, now=now, age_days=40, template=SPARSE)
    report = run_maintenance(agent=caller.agent, now=now)
    methods = report.consolidation.methods if report.consolidation else {}
    return Outcome(",".join(sorted(methods)) or "none", "; ".join(report.errors))


def consolidation_llm(llm, caller) -> Outcome:
    return _consolidate(caller, {"strategy": "llm", "archival": {"age_threshold_days": 30}})


def consolidation_dual_mode(llm, caller) -> Outcome:
    # The seeds' summarization_model is a placeholder: it means "the server's model".
    placeholder = "example-medium-001"
    assert placeholder in PLACEHOLDER_MODELS
    return _consolidate(
        caller,
        {
            "strategy": "dual_mode",
            "group_threshold": 3,
            "archival": {
                "enabled": True,
                "age_threshold_days": 30,
                "dual_mode": {"enabled": True, "summarization_model": placeholder},
            },
        },
    )


def conversation_summary(llm, caller) -> Outcome:
    company_config_set(
        company=caller.company,
        data={"memory": {"conversation": {"summary_threshold_tokens": 50}}},
    )
    words = "the onboarding survey is long and we discussed shortening it again " * 4
    conversation = flush(caller.agent, [f"{words} ({i})" for i in range(4)])
    conversation_summary_refresh(conversation=conversation)
    conversation.refresh_from_db()
    assert conversation.summary_method == (
        "llm" if conversation.summary == SUMMARY else "truncation"
    )
    return Outcome(conversation.summary_method, conversation.summary_error)


def search_and_ask(llm, caller) -> Outcome:
    company_config_set(
        company=caller.company,
        data={
            "memory": {
                "retrieval": {
                    "strategy": "tool_based",
                    "query_reformulation_enabled": True,
                    "max_reformulation_rounds": 1,
                }
            }
        },
    )
    stored = caller.client.post(
        "/api/v1/memories",
        {"content": "Billing deploys every Friday at noon UTC.", "category": "semantic"},
        format="json",
    ).json()["id"]
    response = caller.client.post(
        "/api/v1/memories/tools/call",
        {"name": "search_memory", "arguments": {"query": QUESTION, "limit": 5}},
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    # Whatever the LLM did, the plain search results answer.
    assert stored in [r["memory"]["id"] for r in data["results"]]
    status = "reformulated" if data["queries"] == [QUESTION, REFORMULATED] else "plain"
    return Outcome(status, ",".join(data["degraded"]))


def fine_tune_synthetic(llm, caller) -> Outcome:
    """The fine-tune's synthetic queries (on the LLM cluster): degrade, counted per memory."""
    response = caller.client.post(
        "/api/v1/memories",
        {"content": "Billing deploys every Friday at noon UTC.", "category": "semantic"},
        format="json",
    )
    assert response.status_code == 201, response.content
    found = synthetic_queries_generate(
        company=caller.company, embedder_id=company_embedder(caller.company).embedder_id,
        per_memory=2, max_memories=10, seed=0,
    )  # fmt: skip
    return Outcome(f"{found.method}:generated={len(found.pairs)}", ",".join(sorted(found.skipped)))


SITES: dict[str, Callable[..., Outcome]] = {
    "capture": capture,
    "evolver": evolver,
    "extraction": extraction,
    "dream": dream,
    "consolidation_llm": consolidation_llm,
    "consolidation_dual_mode": consolidation_dual_mode,
    "conversation_summary": conversation_summary,
    "search_and_ask": search_and_ask,
    "fine_tune_synthetic": fine_tune_synthetic,
}

PRODUCED = {
    "capture": Outcome("captured", ""),
    "evolver": Outcome("approval_item", ""),
    "extraction": Outcome("succeeded", ""),
    "dream": Outcome("succeeded", ""),
    "consolidation_llm": Outcome("llm", ""),
    "consolidation_dual_mode": Outcome("llm", ""),
    "conversation_summary": Outcome("llm", ""),
    "search_and_ask": Outcome("reformulated", ""),
    "fine_tune_synthetic": Outcome("llm:generated=2", ""),
}


@pytest.fixture(autouse=True)
def _fresh_model_discovery():
    forget_discovered_models()
    yield
    forget_discovered_models()


def run_site(site: str, profile: str, caller, settings, fault: Fault | None = None, **conf):
    with LLMProviderStandIn(PROFILES[profile], answer=model_answer) as llm:
        llm.fault = fault
        settings.SYNTHORG_LLM = llm.settings(**conf)
        outcome = SITES[site](llm, caller)
        sent = {r.json()["model"] for r in llm.chat_requests}
    # The placeholder is never sent; with no model configured the listed one is used.
    assert not [model for model in sent if is_placeholder(model)]
    if not conf.get("MODEL") and fault is not Fault.NO_MODELS:
        assert sent <= set(PROFILES[profile].models)
    return outcome


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("site", sorted(SITES))
def test_every_path_produces_its_result_with_every_provider(site, profile, caller, settings):
    assert run_site(site, profile, caller, settings) == PRODUCED[site]


def test_evolver_with_default_settings_and_a_strict_provider_emits_an_approval_item(
    caller, settings
):
    """The evolver used to send ``memory.procedural.model``'s placeholder default
    (``example-small-001``) as is: a real provider answers 404 and every draft failed."""
    with LLMProviderStandIn(PROFILES["openai"], answer=model_answer) as llm:
        settings.SYNTHORG_LLM = llm.settings(MODEL="gpt-4o-mini")
        outcome = evolver(llm, caller)
        assert [r.json()["model"] for r in llm.chat_requests] == ["gpt-4o-mini"]
    assert outcome == Outcome("approval_item", "")
    report = EvolverReport.objects.get()
    assert (report.status, report.drafts_failed, report.proposals_emitted) == ("completed", 0, 1)


# --- faults ------------------------------------------------------------------------------

TRUNCATED_JSON = "the reply was cut off at max_tokens (finish_reason: length)"
NO_MODEL = "no model to ask: no model is configured"

# (site, fault) -> (recorded status, a substring of the recorded reason / degraded flags).
FAULT_OUTCOMES: dict[Fault, dict[str, tuple[str, str]]] = {
    Fault.TRUNCATED: {
        "capture": ("captured:rule", "proposer answer truncated (max_tokens reached)"),
        # an unusable answer: the rule draft stands in at once, the reason on the run
        "evolver": ("approval_item", TRUNCATED_JSON),
        "extraction": ("failed", TRUNCATED_JSON),
        "dream": ("failed", TRUNCATED_JSON),
        # vLLM's profile thinks first: the cut lands in the <think> block, no summary left.
        "consolidation_llm": ("concatenation", ""),
        "consolidation_dual_mode": ("truncation", ""),
        "conversation_summary": ("truncation", "the LLM answered no summary text"),
        "search_and_ask": ("plain", "sufficiency_check"),
        "fine_tune_synthetic": ("llm:generated=0", "invalid_answer"),
    },
    Fault.SERVER_ERROR: {
        "capture": ("captured:rule", "LLMTransientError"),
        "evolver": ("completed:drafts_failed=1", "HTTP 5"),
        "extraction": ("failed", "HTTP 5"),
        "dream": ("failed", "HTTP 5"),
        "consolidation_llm": ("concatenation", ""),
        "consolidation_dual_mode": ("truncation", ""),
        "conversation_summary": ("truncation", "LLMTransientError"),
        "search_and_ask": ("plain", "sufficiency_check"),
        "fine_tune_synthetic": ("llm:generated=0", "llm_unavailable"),
    },
    Fault.HANG: {
        "capture": ("captured:rule", "time budget exhausted"),
        "evolver": ("completed:drafts_failed=1", "time budget exhausted"),
        "extraction": ("failed", "time budget exhausted"),
        "dream": ("failed", "time budget exhausted"),
        "consolidation_llm": ("concatenation", ""),
        "consolidation_dual_mode": ("truncation", ""),
        "conversation_summary": ("truncation", "time budget exhausted"),
        "search_and_ask": ("plain", "sufficiency_check,llm_budget_exceeded"),
        "fine_tune_synthetic": ("llm:generated=0", "llm_unavailable"),
    },
    Fault.TRICKLE: {
        "capture": ("captured:rule", "time budget exhausted while reading the response"),
        "evolver": ("completed:drafts_failed=1", "time budget exhausted while reading"),
        "extraction": ("failed", "time budget exhausted while reading the response"),
        "dream": ("failed", "time budget exhausted while reading the response"),
        "consolidation_llm": ("concatenation", ""),
        "consolidation_dual_mode": ("truncation", ""),
        "conversation_summary": ("truncation", "time budget exhausted while reading"),
        "search_and_ask": ("plain", "sufficiency_check,llm_budget_exceeded"),
        "fine_tune_synthetic": ("llm:generated=0", "llm_unavailable"),
    },
    Fault.CONTEXT_LENGTH: {
        "capture": ("captured:rule", "maximum context length"),
        "evolver": ("completed:drafts_failed=1", "maximum context length"),
        "extraction": ("failed", "maximum context length"),
        "dream": ("failed", "maximum context length"),
        "consolidation_llm": ("none", "maximum context length"),
        "consolidation_dual_mode": ("none", "maximum context length"),
        "conversation_summary": ("truncation", "maximum context length"),
        "search_and_ask": ("plain", "sufficiency_check"),
        "fine_tune_synthetic": ("llm:generated=0", "llm_refused"),
    },
    Fault.NO_MODELS: {
        "capture": ("captured:rule", NO_MODEL),
        "evolver": ("completed:drafts_failed=1", NO_MODEL),
        "extraction": ("failed", NO_MODEL),
        "dream": ("failed", NO_MODEL),
        "consolidation_llm": ("concatenation", ""),
        "consolidation_dual_mode": ("truncation", ""),
        "conversation_summary": ("truncation", NO_MODEL),
        "search_and_ask": ("plain", "sufficiency_check"),
        "fine_tune_synthetic": ("llm:generated=0", "llm_refused"),
    },
}
# The answer arrives all the same: these faults change nothing a user sees.
RECOVERED = (
    Fault.FENCED,
    Fault.PROSE,
    Fault.REASONING,
    Fault.RATE_LIMITED_ONCE,
    Fault.NO_STRUCTURED_OUTPUT,
)
# Settings that make a hang or a trickle end quickly (no wall-clock assertion: the outcome
# is what is checked).
FAULT_SETTINGS = {
    Fault.HANG: {"TOTAL_TIMEOUT": 0.4, "REQUEST_BUDGET": 0.4},
    Fault.TRICKLE: {"TOTAL_TIMEOUT": 0.4, "REQUEST_BUDGET": 0.4},
    Fault.SERVER_ERROR: {"MAX_RETRIES": 0},
}


@pytest.mark.parametrize("fault", RECOVERED)
@pytest.mark.parametrize("site", sorted(SITES))
def test_recoverable_faults_still_produce_the_result(site, fault, caller, settings):
    profile = "openai" if fault is Fault.NO_STRUCTURED_OUTPUT else "llamacpp"
    assert run_site(site, profile, caller, settings, fault) == PRODUCED[site]


@pytest.mark.parametrize("fault", sorted(FAULT_OUTCOMES))
@pytest.mark.parametrize("site", sorted(SITES))
def test_faults_record_a_precise_status(site, fault, caller, settings):
    profile = "vllm"  # its context-length refusal says "maximum context length" like OpenAI's
    outcome = run_site(site, profile, caller, settings, fault, **FAULT_SETTINGS.get(fault, {}))
    status, detail = FAULT_OUTCOMES[fault][site]
    assert outcome.status == status, outcome
    assert detail in outcome.detail, outcome


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_unknown_configured_model_is_reported_with_the_providers_message(profile, caller, settings):
    outcome = run_site("capture", profile, caller, settings, MODEL="no-such-model")
    if PROFILES[profile].unknown_model is None:  # llama.cpp serves its one model regardless
        assert outcome == PRODUCED["capture"]
        return
    assert outcome.status == "captured:rule"
    assert outcome.detail.startswith("llm_error: LLMRequestError: ")
    assert "(model 'no-such-model') failed: HTTP 404" in outcome.detail
    assert "no-such-model" in outcome.detail.split("HTTP 404", 1)[1]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_context_length_per_profile(profile, caller, settings):
    outcome = run_site("extraction", profile, caller, settings, Fault.CONTEXT_LENGTH)
    if PROFILES[profile].context_length is None:  # Ollama truncates the prompt and answers
        assert outcome == PRODUCED["extraction"]
        return
    assert outcome.status == "failed" and "HTTP 400" in outcome.detail


def test_a_trickle_and_a_hang_stop_at_the_total_deadline_not_per_read(caller, settings):
    """Each trickled byte arrives well within the per-read timeout; only the total deadline
    ends the call — one attempt, no retry after the budget is spent."""
    with LLMProviderStandIn(PROFILES["openai"], answer=model_answer) as llm:
        llm.fault = Fault.TRICKLE
        settings.SYNTHORG_LLM = llm.settings(TIMEOUT=5, TOTAL_TIMEOUT=0.4, MAX_RETRIES=3)
        outcome = capture(llm, caller)
        assert len(llm.chat_requests) == 1
    assert outcome.status == "captured:rule"
    assert "time budget exhausted while reading the response" in outcome.detail


def test_search_and_ask_answers_with_plain_results_when_the_llm_budget_runs_out(caller, settings):
    """The budget covers every LLM call of the request: a never-answering endpoint costs one
    cut call, and the plain results answer with ``llm_budget_exceeded``."""
    with LLMProviderStandIn(PROFILES["ollama"], answer=model_answer) as llm:
        llm.fault = Fault.HANG
        settings.SYNTHORG_LLM = llm.settings(
            MODEL="llama3.2:latest", TOTAL_TIMEOUT=60, MAX_RETRIES=3, REQUEST_BUDGET=0.3
        )
        outcome = search_and_ask(llm, caller)
        assert len(llm.chat_requests) == 1
    assert outcome == Outcome("plain", "sufficiency_check,llm_budget_exceeded")


def test_the_request_budget_setting_defaults_to_15_seconds():
    from django.conf import settings as django_settings

    assert django_settings.SYNTHORG_LLM["REQUEST_BUDGET"] == 15.0


def test_discovery_runs_once_per_endpoint(caller, settings):
    with LLMProviderStandIn(PROFILES["lmstudio"], answer=model_answer) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        assert capture(llm, caller) == PRODUCED["capture"]
        assert capture(llm, caller).status == "captured"
        assert len(llm.server.requests_to(llm.server.MODELS)) == 1


def test_an_unreachable_models_list_is_a_recorded_configuration_error(caller, settings):
    with LLMProviderStandIn(PROFILES["openai"], answer=model_answer) as llm:
        llm.server.set_handler(
            llm.server.MODELS,
            lambda request: ScriptedResponse(status=401, json={"error": {"message": "bad key"}}),
        )
        settings.SYNTHORG_LLM = llm.settings()
        outcome = capture(llm, caller)
        assert llm.chat_requests == []
        base_url = llm.base_url
    assert outcome.status == "captured:rule"
    assert outcome.detail == (
        "llm_error: LLMConfigurationError: no model to ask: no model is configured (set "
        "SYNTHORG_LLM_MODEL or the feature's model setting) and GET "
        f"{base_url}/models answered HTTP 401 ({RULE_STANDS_IN})"
    )


def test_api_shows_the_configuration_error(caller, settings):
    with LLMProviderStandIn(PROFILES["vllm"], answer=model_answer) as llm:
        llm.fault = Fault.NO_MODELS
        settings.SYNTHORG_LLM = llm.settings()
        response = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json")
        report_id = response.json()["id"]
        execution_report_capture(report_id=report_id)
    body = caller.client.get(f"/api/v1/executions/{report_id}").json()
    assert (body["capture_status"], body["capture_method"]) == ("captured", "rule")
    assert body["capture_reason"].startswith("llm_error: LLMConfigurationError: no model to ask")
    assert body["capture_reason"].endswith(f"/models lists no model ({RULE_STANDS_IN})")
