"""The hierarchical retriever through POST /memories/context: routing, merge, reflective retry,
with no LLM (category hints, similarity threshold) and with the strict LLM stand-in."""

from __future__ import annotations

import json

import pytest

from memory.core.models.memory import Memory
from memory.prompting.hierarchical import JUDGEMENT_SYSTEM, ROUTING_SYSTEM
from persistence.services.companies import company_config_set
from synthorg.llm.resolution import forget_discovered_models
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories/context"
HOW = "how do I deploy the billing service?"
UNRELATED = "zebra xylophone quantum"


@pytest.fixture(autouse=True)
def _fresh_models():
    forget_discovered_models()
    yield
    forget_discovered_models()


def configure(caller, **retrieval):
    company_config_set(company=caller.company, data={"memory": {"retrieval": retrieval}})


def store(caller, content, category):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": category}, format="json"
    )
    assert response.status_code == 201, response.json()
    return str(Memory.objects.get(pk=response.json()["id"]).pk)


def seed(caller) -> dict[str, str]:
    return {
        "semantic": store(caller, "The billing service is owned by Maria.", "semantic"),
        "episodic": store(caller, "Yesterday the billing deploy failed at noon.", "episodic"),
        "procedural": store(caller, "To deploy billing, run make release.", "procedural"),
    }


def context(caller, query=HOW, **body):
    response = caller.client.post(
        URL, {"query": query, "token_budget": 2000, **body}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def included(body) -> set[str]:
    return {entry["id"] for entry in body["included"]}


def test_flat_has_no_trace_and_finds_every_kind(caller):
    ids = seed(caller)
    body = context(caller)
    assert included(body) == set(ids.values())
    assert "retrieval" not in body and body["degraded"] == []


def test_without_an_llm_the_cue_words_route_within_max_workers(caller):
    ids = seed(caller)
    configure(caller, retriever="hierarchical", max_workers_per_query=1)
    body = context(caller)
    assert included(body) == {ids["procedural"]}
    assert body["retrieval"] == {
        "retriever": "hierarchical",
        "routing": "hints",
        "workers": ["procedural"],
        "judgement": "",
        "queries": [HOW],
        "retries": 0,
    }
    assert body["degraded"] == []


def test_every_worker_runs_and_merges_when_the_bound_allows(caller):
    ids = seed(caller)
    configure(caller, retriever="hierarchical")  # max_workers_per_query defaults to 3
    body = context(caller)
    assert included(body) == set(ids.values())
    assert body["retrieval"]["workers"] == ["procedural", "semantic", "episodic"]
    # RRF over disjoint worker lists: each worker's best first, in routing order
    assert body["included"][0]["id"] == ids["procedural"]


def test_the_request_categories_limit_the_workers(caller):
    ids = seed(caller)
    configure(caller, retriever="hierarchical")
    body = context(caller, categories=["episodic"])
    assert body["retrieval"]["workers"] == ["episodic"]
    assert included(body) == {ids["episodic"]}


@pytest.mark.parametrize("max_retry_count", [1, 2, 3])
def test_without_an_llm_a_poor_result_retries_with_corrections_up_to_the_count(
    caller, max_retry_count
):
    seed(caller)
    configure(
        caller,
        retriever="hierarchical",
        reflective_retry_enabled=True,
        max_retry_count=max_retry_count,
    )
    body = context(caller, query=UNRELATED)
    trace = body["retrieval"]
    assert trace["judgement"] == "score"
    assert trace["retries"] == max_retry_count
    assert trace["queries"] == [UNRELATED, "xylophone", "quantum", "zebra"][: max_retry_count + 1]


def test_without_an_llm_a_good_result_is_not_retried(caller):
    seed(caller)
    configure(caller, retriever="hierarchical", reflective_retry_enabled=True, max_retry_count=3)
    body = context(caller)
    assert body["retrieval"]["retries"] == 0
    assert body["retrieval"]["queries"] == [HOW]


def llm_answer(routes, verdicts):
    """The model: routing answers ``routes``; each judgement pops the next verdict."""

    def answer(body):
        system = body["messages"][0]["content"]
        if system == ROUTING_SYSTEM:
            return json.dumps({"workers": routes})
        if system == JUDGEMENT_SYSTEM:
            return json.dumps(verdicts.pop(0))
        raise AssertionError(system[:60])

    return answer


def test_with_an_llm_the_model_routes(caller, settings):
    ids = seed(caller)
    configure(caller, retriever="hierarchical", max_workers_per_query=2)
    with LLMProviderStandIn(
        PROFILES["openai"], answer=llm_answer(["episodic", "semantic", "procedural"], [])
    ) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        body = context(caller)
        sent = [r.json() for r in llm.chat_requests]
    assert body["retrieval"]["routing"] == "llm"
    assert body["retrieval"]["workers"] == ["episodic", "semantic"]  # bounded by 2
    assert included(body) == {ids["episodic"], ids["semantic"]}
    assert len(sent) == 1
    assert sent[0]["response_format"]["type"] == "json_schema"
    assert sent[0]["response_format"]["json_schema"]["strict"] is True
    assert sent[0]["model"] == "gpt-4o-mini"  # discovered, as every LLM call resolves it


def test_with_an_llm_the_judge_corrects_the_query_up_to_max_retry_count(caller, settings):
    seed(caller)
    configure(caller, retriever="hierarchical", reflective_retry_enabled=True, max_retry_count=2)
    verdicts = [
        {"sufficient": False, "corrected_query": "billing release steps"},
        {"sufficient": False, "corrected_query": "make release"},
        {"sufficient": False, "corrected_query": "never asked"},
    ]
    with LLMProviderStandIn(PROFILES["vllm"], answer=llm_answer(["procedural"], verdicts)) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        body = context(caller)
        requests = len(llm.chat_requests)
    trace = body["retrieval"]
    assert (trace["judgement"], trace["retries"]) == ("llm", 2)
    assert trace["queries"] == [HOW, "billing release steps", "make release"]
    assert requests == 1 + 2  # routing + one judgement per attempt before a retry
    assert verdicts == [{"sufficient": False, "corrected_query": "never asked"}]


def test_with_an_llm_a_sufficient_verdict_stops(caller, settings):
    seed(caller)
    configure(caller, retriever="hierarchical", reflective_retry_enabled=True, max_retry_count=3)
    verdicts = [{"sufficient": True, "corrected_query": ""}]
    with LLMProviderStandIn(PROFILES["ollama"], answer=llm_answer(["procedural"], verdicts)) as llm:
        llm.fault = Fault.FENCED  # answers wrapped in prose and a fence are read all the same
        settings.SYNTHORG_LLM = llm.settings()
        body = context(caller)
    assert body["retrieval"]["retries"] == 0 and body["degraded"] == []


def test_a_failing_llm_falls_back_to_the_rules_and_says_so(caller, settings):
    ids = seed(caller)
    configure(
        caller,
        retriever="hierarchical",
        max_workers_per_query=1,
        reflective_retry_enabled=True,
        max_retry_count=1,
    )
    with LLMProviderStandIn(PROFILES["openai"], answer="unused") as llm:
        llm.fault = Fault.SERVER_ERROR
        settings.SYNTHORG_LLM = llm.settings(MAX_RETRIES=0)
        body = context(caller, query=UNRELATED)
    assert body["degraded"] == ["routing", "judgement"]
    trace = body["retrieval"]
    assert (trace["routing"], trace["judgement"]) == ("hints", "score")
    assert trace["workers"] == ["semantic"]
    assert trace["queries"] == [UNRELATED, "xylophone"]
    assert included(body) == {ids["semantic"]}


def test_a_hanging_llm_is_cut_at_the_request_budget(caller, settings):
    seed(caller)
    configure(caller, retriever="hierarchical", max_workers_per_query=1)
    with LLMProviderStandIn(PROFILES["openai"], answer="unused") as llm:
        llm.fault = Fault.HANG
        settings.SYNTHORG_LLM = llm.settings(REQUEST_BUDGET=0.3, TOTAL_TIMEOUT=60)
        body = context(caller)
        assert len(llm.chat_requests) == 1
    assert body["degraded"] == ["routing", "llm_budget_exceeded"]
    assert body["retrieval"]["workers"] == ["procedural"]
