"""Every retrieval knob of the hierarchical retriever and the re-ranker either changes what a
context request returns or is refused at config load (no knob accepted and ignored)."""

from __future__ import annotations

import pytest

from memory.prompting.rerank import rerank_cache
from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.company_config.memory import MemoryRetrievalConfig
from tests.memory.prompting.test_hierarchical import UNRELATED, included
from tests.memory.prompting.test_hierarchical import configure as configure_h
from tests.memory.prompting.test_hierarchical import context as context_h
from tests.memory.prompting.test_hierarchical import seed as seed_h
from tests.memory.prompting.test_rerank import configure, context, marker_first, order, seed
from tests.support.llm_provider import PROFILES, LLMProviderStandIn

pytestmark = pytest.mark.django_db

KNOBS = (
    "retriever",
    "max_workers_per_query",
    "reflective_retry_enabled",
    "max_retry_count",
    "query_specific_rerank_enabled",
    "rerank_cache_ttl_seconds",
)


def check_retriever(caller, settings):
    seed_h(caller)
    flat = context_h(caller)
    configure_h(caller, retriever="hierarchical", max_workers_per_query=1)
    assert included(context_h(caller)) != included(flat)


def check_max_workers_per_query(caller, settings):
    seed_h(caller)
    configure_h(caller, retriever="hierarchical", max_workers_per_query=1)
    one = context_h(caller)
    configure_h(caller, retriever="hierarchical", max_workers_per_query=2)
    two = context_h(caller)
    assert len(one["retrieval"]["workers"]) == 1 and len(two["retrieval"]["workers"]) == 2
    assert included(one) < included(two)


def check_reflective_retry_enabled(caller, settings):
    seed_h(caller)
    configure_h(caller, retriever="hierarchical")
    assert context_h(caller, query=UNRELATED)["retrieval"]["queries"] == [UNRELATED]
    configure_h(caller, retriever="hierarchical", reflective_retry_enabled=True)
    assert len(context_h(caller, query=UNRELATED)["retrieval"]["queries"]) == 2


def check_max_retry_count(caller, settings):
    seed_h(caller)
    counts = []
    for count in (1, 3):
        configure_h(
            caller, retriever="hierarchical", reflective_retry_enabled=True, max_retry_count=count
        )
        counts.append(context_h(caller, query=UNRELATED)["retrieval"]["retries"])
    assert counts == [1, 3]


def check_query_specific_rerank_enabled(caller, settings):
    seed(caller)
    with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
        settings.SYNTHORG_LLM = llm.settings()
        before = order(context(caller))
        configure(caller, query_specific_rerank_enabled=True)
        assert order(context(caller)) != before


def check_rerank_cache_ttl_seconds(caller, settings):
    seed(caller)
    now = [0.0]
    rerank_cache.clock = lambda: now[0]
    try:
        asked = []
        with LLMProviderStandIn(PROFILES["openai"], answer=marker_first) as llm:
            settings.SYNTHORG_LLM = llm.settings()
            for ttl in (60, 600):
                rerank_cache.clear()
                configure(caller, query_specific_rerank_enabled=True, rerank_cache_ttl_seconds=ttl)
                start = len(llm.chat_requests)
                context(caller)
                now[0] += 120
                context(caller)
                asked.append(len(llm.chat_requests) - start)
        assert asked == [2, 1]  # expired after 60 s, still cached after 600 s
    finally:
        rerank_cache.clock = type(rerank_cache)().clock


CHECKS = {name: globals()[f"check_{name}"] for name in KNOBS}


def test_the_knobs_are_exactly_the_hierarchical_and_rerank_fields():
    fields = set(MemoryRetrievalConfig.model_fields)
    assert set(KNOBS) <= fields
    assert set(CHECKS) == set(KNOBS)


@pytest.mark.parametrize("name", KNOBS)
def test_each_knob_changes_behaviour(name, caller, settings):
    CHECKS[name](caller, settings)


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"max_workers_per_query": 2}, "max_workers_per_query"),
        ({"reflective_retry_enabled": True}, "reflective_retry_enabled"),
        ({"retriever": "hierarchical", "max_retry_count": 2}, "max_retry_count"),
        ({"rerank_cache_ttl_seconds": 60}, "rerank_cache_ttl_seconds"),
        ({"strategy": "tool_based", "retriever": "hierarchical"}, "retriever"),
        (
            {"strategy": "self_editing", "query_specific_rerank_enabled": True},
            "query_specific_rerank_enabled",
        ),
    ],
)
def test_each_knob_without_what_it_tunes_is_refused(fields, refused):
    with pytest.raises(CompanyConfigError, match=rf"memory\.retrieval\.{refused}: "):
        parse_company_config({"memory": {"retrieval": fields}})
