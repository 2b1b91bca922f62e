"""Query-specific LLM re-ranking: context and the search_memory tool, against the strict
stand-in and with no LLM; the cache (keyed by company, query, candidate set, model; TTL)."""

from __future__ import annotations

import json
import re

import pytest

from memory.core.models.memory import Memory
from memory.prompting.rerank import RERANK_SYSTEM, RerankCache, parse_order, rerank, rerank_cache
from memory.prompting.search_and_ask import StepFailed
from persistence.services.companies import company_config_set
from synthorg.llm import completion_provider_from_settings
from synthorg.llm.resolution import forget_discovered_models
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories/context"
QUERY = "billing deploy schedule"
MARKER = "ZETA"


@pytest.fixture(autouse=True)
def _fresh_models():
    forget_discovered_models()
    yield
    forget_discovered_models()


def configure(caller, **retrieval):
    company_config_set(company=caller.company, data={"memory": {"retrieval": retrieval}})


def store(caller, content, category="semantic"):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": category}, format="json"
    )
    assert response.status_code == 201, response.json()
    return str(Memory.objects.get(pk=response.json()["id"]).pk)


def seed(caller) -> dict[str, str]:
    return {
        "deploy": store(caller, "Billing deploys follow a weekly schedule: Fridays at noon."),
        "freeze": store(caller, "Billing deploys are frozen in December."),
        "marker": store(caller, f"{MARKER}: the cafeteria serves soup on Mondays."),
    }


def marker_first(body) -> str:
    """The model: the memory holding MARKER first, the others in the order shown."""
    assert body["messages"][0]["content"] == RERANK_SYSTEM
    lines = re.findall(r"^(\d+)\. (.*)$", body["messages"][1]["content"], re.MULTILINE)
    numbers = [int(n) for n, text in lines if MARKER in text]
    numbers += [int(n) for n, text in lines if MARKER not in text]
    return json.dumps({"order": numbers})


def context(caller, **body):
    response = caller.client.post(
        URL, {"query": QUERY, "token_budget": 2000, **body}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()


def order(body) -> list[str]:
    return [entry["id"] for entry in body["included"]]


def test_the_llm_order_replaces_the_fused_one_keeping_the_score_scale(caller, settings):
    ids = seed(caller)
    flat = context(caller)
    assert order(flat)[-1] == ids["marker"]  # fused: the unrelated memory last
    configure(caller, query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        body = context(caller)
        sent = llm.chat_requests[0].json()
    assert order(body) == [ids["marker"], *order(flat)[:-1]]
    assert [e["score"] for e in body["included"]] == [e["score"] for e in flat["included"]]
    assert body["retrieval"] == {"retriever": "flat", "rerank": "llm"}
    assert body["degraded"] == []
    assert sent["response_format"]["json_schema"]["name"] == "rerank"


def test_a_second_call_is_served_from_the_cache_without_an_llm_request(caller, settings):
    ids = seed(caller)
    configure(caller, query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["lmstudio"], answer=marker_first) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        first = context(caller)
        second = context(caller)
        asked = len(llm.chat_requests)
        store(caller, "Billing deploy schedule moved to Thursdays.")  # a new candidate set
        third = context(caller)
        asked_after_change = len(llm.chat_requests)
    assert asked == 1 and asked_after_change == 2
    assert first["retrieval"]["rerank"] == "llm" and second["retrieval"]["rerank"] == "cache"
    assert order(second) == order(first) and order(first)[0] == ids["marker"]
    assert third["retrieval"]["rerank"] == "llm"


def test_the_cache_lives_for_rerank_cache_ttl_seconds(caller, settings, monkeypatch):
    seed(caller)
    configure(caller, query_specific_rerank_enabled=True, rerank_cache_ttl_seconds=60)
    now = [1000.0]
    monkeypatch.setattr(rerank_cache, "clock", lambda: now[0])
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        context(caller)
        now[0] += 59
        assert context(caller)["retrieval"]["rerank"] == "cache"
        now[0] += 1
        assert context(caller)["retrieval"]["rerank"] == "llm"
        assert len(llm.chat_requests) == 2


@pytest.mark.parametrize(
    ("fault", "answer", "degraded"),
    [
        (Fault.SERVER_ERROR, marker_first, ["rerank"]),
        (None, json.dumps({"order": [99, 0]}), ["rerank"]),  # names no candidate
        (None, "I cannot rank these.", ["rerank"]),  # no JSON at all
        (Fault.HANG, marker_first, ["rerank", "llm_budget_exceeded"]),
    ],
)
def test_a_failure_keeps_the_fused_order_and_says_so(caller, settings, fault, answer, degraded):
    seed(caller)
    flat = context(caller)
    configure(caller, query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["openai"], answer=answer) as llm:
        llm.fault = fault
        settings.SYNTHORG_LLM = llm.settings(MAX_RETRIES=0, REQUEST_BUDGET=0.5, TOTAL_TIMEOUT=60)
        body = context(caller)
        again = context(caller)
        asked = len(llm.chat_requests)
    assert order(body) == order(flat)
    assert body["degraded"] == degraded
    assert body["retrieval"] == {"retriever": "flat", "rerank": ""}
    assert asked == 2  # a failure is not cached
    assert order(again) == order(flat)


def test_the_model_lookup_is_bounded_by_the_request_budget(caller, settings):
    """No model configured: the re-ranker's first step asks ``GET /models``. A hanging
    lookup is cut at the request's LLM budget (not at the HTTP timeout), says so, and is
    not remembered as "no model" for the calls that follow."""
    seed(caller)
    flat = context(caller)
    configure(caller, query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        # per attempt and per call far beyond the budget: only the budget can end the lookup
        settings.SYNTHORG_LLM = llm.settings(TIMEOUT=60, TOTAL_TIMEOUT=60, REQUEST_BUDGET=0.5)
        llm.server.enqueue(FakeOpenAIServer.MODELS, ScriptedResponse(delay=3600))  # hangs
        body = context(caller)
        assert llm.chat_requests == []
        # the endpoint lists its model again: the next caller finds it (nothing cached)
        assert completion_provider_from_settings().model_for() == "gpt-4o-mini"
    assert order(body) == order(flat)
    assert body["degraded"] == ["rerank", "llm_budget_exceeded"]
    assert body["retrieval"] == {"retriever": "flat", "rerank": ""}


def test_without_an_llm_the_fused_order_answers_with_rerank_unavailable(caller):
    seed(caller)
    flat = context(caller)
    configure(caller, query_specific_rerank_enabled=True)
    body = context(caller)
    assert order(body) == order(flat)
    assert body["degraded"] == ["rerank_unavailable"]


def test_rerank_follows_the_hierarchical_merge(caller, settings):
    ids = seed(caller)
    configure(caller, retriever="hierarchical", query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        llm.answer = lambda body: (
            json.dumps({"workers": ["semantic"]})
            if body["messages"][0]["content"] != RERANK_SYSTEM
            else marker_first(body)
        )
        settings.SYNTHORG_LLM = llm.settings()
        body = context(caller)
    assert body["retrieval"]["retriever"] == "hierarchical"
    assert body["retrieval"]["rerank"] == "llm"
    assert order(body)[0] == ids["marker"]


def test_the_search_memory_tool_is_reranked_for_tool_based(caller, settings):
    ids = seed(caller)
    configure(caller, strategy="tool_based", query_specific_rerank_enabled=True)
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        response = caller.client.post(
            "/api/v1/memories/tools/call",
            {"name": "search_memory", "arguments": {"query": QUERY, "limit": 5}},
            format="json",
        )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["reranked"] == "llm" and data["degraded"] == []
    assert data["results"][0]["memory"]["id"] == ids["marker"]


# --- the pure parts ----------------------------------------------------------------------


def test_parse_order_keeps_valid_first_mentions():
    assert parse_order({"order": [3, 3, 0, True, "2", 1, 9]}, 3) == [2, 0]
    with pytest.raises(StepFailed):
        parse_order({"order": []}, 3)
    with pytest.raises(StepFailed):
        parse_order({"ranking": [1]}, 3)


def test_the_cache_key_includes_the_model(settings):
    cache = RerankCache()
    items = ["alpha memory", "beta memory", "gamma memory"]
    with LLMProviderStandIn(PROFILES["openai"], answer=json.dumps({"order": [3, 1, 2]})) as llm:
        for model in ("gpt-4o-mini", "gpt-4o-mini", "gpt-4.1"):
            llm.profile = llm.profile.__class__(
                **{**llm.profile.__dict__, "models": ("gpt-4o-mini", "gpt-4.1")}
            )
            settings.SYNTHORG_LLM = llm.settings(MODEL=model)
            outcome = rerank(
                items, company_id=1, query="q", key=lambda t: t, text=lambda t: t,
                provider=completion_provider_from_settings(), ttl_seconds=60, deadline=None,
                cache=cache,
            )  # fmt: skip
            assert outcome.items == ["gamma memory", "alpha memory", "beta memory"]
        assert len(llm.chat_requests) == 2  # the second gpt-4o-mini call hit the cache
