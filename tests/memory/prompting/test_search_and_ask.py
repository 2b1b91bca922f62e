"""Search-and-Ask: the pure loop, and search_memory against an OpenAI-wire chat server."""

import pytest

from memory.prompting.search_and_ask import StepFailed, search_and_ask
from persistence.services.companies import company_config_set
from tests.support.openai_server import (
    FakeOpenAIServer,
    ScriptedResponse,
    chat_completion_payload,
    error_payload,
)

CALL = "/api/v1/memories/tools/call"


def loop(rounds, *, verdicts, reformulations, max_rounds=3, limit=10):
    """rounds: query → [(key, score)]; verdicts / reformulations: played in order."""
    verdicts, reformulations = list(verdicts), list(reformulations)
    retrieved = []

    def retrieve(query):
        retrieved.append(query)
        result = rounds[query]
        if isinstance(result, Exception):
            raise result
        return result

    def check(question, hits):
        verdict = verdicts.pop(0)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    def reformulate(question, tried, hits):
        answer = reformulations.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    outcome = search_and_ask(
        "q0",
        retrieve=retrieve,
        is_sufficient=check,
        reformulate=reformulate,
        key=lambda hit: hit[0],
        score=lambda hit: hit[1],
        max_rounds=max_rounds,
        limit=limit,
    )
    return outcome, retrieved


def test_sufficient_on_the_first_round():
    outcome, retrieved = loop({"q0": [("a", 0.9)]}, verdicts=[True], reformulations=[])
    assert (outcome.hits, outcome.queries, outcome.sufficient) == ([("a", 0.9)], ["q0"], True)
    assert retrieved == ["q0"] and outcome.degraded == []


def test_reformulates_and_merges_keeping_the_best_score():
    rounds = {
        "q0": [("a", 0.5), ("b", 0.4)],
        "q1": [("b", 0.8), ("c", 0.3)],
        "q2": [("a", 0.2), ("d", 0.6)],
    }
    outcome, retrieved = loop(rounds, verdicts=[False, False, True], reformulations=["q1", "q2"])
    assert retrieved == ["q0", "q1", "q2"] and outcome.queries == ["q0", "q1", "q2"]
    assert outcome.hits == [("b", 0.8), ("d", 0.6), ("a", 0.5), ("c", 0.3)]
    assert outcome.sufficient is True


def test_stops_after_max_rounds_and_at_the_limit():
    rounds = {"q0": [("a", 0.1)], "q1": [("b", 0.2)], "q2": [("c", 0.3)]}
    outcome, retrieved = loop(
        rounds, verdicts=[False, False], reformulations=["q1", "q2"], max_rounds=2, limit=2
    )
    assert retrieved == ["q0", "q1", "q2"]
    assert outcome.hits == [("c", 0.3), ("b", 0.2)] and outcome.sufficient is False


def test_failures_degrade_to_what_was_found():
    found = {"q0": [("a", 0.5)], "q1": StepFailed("db down")}
    checker_failed, _ = loop(found, verdicts=[StepFailed("llm")], reformulations=[])
    assert checker_failed.hits == [("a", 0.5)] and checker_failed.degraded == ["sufficiency_check"]
    reform_failed, _ = loop(found, verdicts=[False], reformulations=[StepFailed("llm")])
    assert reform_failed.degraded == ["reformulation"] and reform_failed.queries == ["q0"]
    retrieval_failed, _ = loop(found, verdicts=[False], reformulations=["q1"])
    assert retrieval_failed.hits == [("a", 0.5)] and retrieval_failed.degraded == ["retrieval"]
    repeated, retrieved = loop(found, verdicts=[False], reformulations=["q0"])
    assert retrieved == ["q0"] and repeated.degraded == []  # nothing new to ask


def test_rounds_are_bounded():
    with pytest.raises(ValueError):
        loop({"q0": []}, verdicts=[], reformulations=[], max_rounds=6)


# --- search_memory with a real chat client against the local OpenAI-wire server -------------


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer() as server:
        settings.SYNTHORG_LLM = {
            "BASE_URL": server.base_url,
            "API_KEY": "sk-test",
            "MODEL": "checker",
            "TIMEOUT": 5,
            "MAX_RETRIES": 0,
        }
        yield server


def reply(content):
    return ScriptedResponse(json=chat_completion_payload(content))


def reformulating(caller, rounds=2):
    company_config_set(
        company=caller.company,
        data={
            "memory": {
                "retrieval": {
                    "strategy": "tool_based",
                    "query_reformulation_enabled": True,
                    "max_reformulation_rounds": rounds,
                }
            }
        },
    )


def seed(caller):
    ids = {}
    for key, content in {
        "deploy": "The billing service deploys every Friday at noon UTC.",
        "freeze": "Release freeze: no production changes during the quarter-end close.",
    }.items():
        response = caller.client.post(
            "/api/v1/memories", {"content": content, "category": "semantic"}, format="json"
        )
        ids[key] = response.json()["id"]
    return ids


def search_tool(caller, query="when can billing ship?", limit=5):
    response = caller.client.post(
        CALL,
        {"name": "search_memory", "arguments": {"query": query, "limit": limit}},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()["data"]


@pytest.mark.django_db
def test_search_memory_sufficient_on_round_one(caller, llm):
    reformulating(caller)
    ids = seed(caller)
    llm.enqueue(llm.CHAT_COMPLETIONS, reply('{"sufficient": true}'))
    data = search_tool(caller)
    assert data["queries"] == ["when can billing ship?"] and data["degraded"] == []
    assert ids["deploy"] in [r["memory"]["id"] for r in data["results"]]
    chats = llm.requests_to(llm.CHAT_COMPLETIONS)
    assert len(chats) == 1
    prompt = chats[0].json()["messages"][1]["content"]
    assert prompt.startswith("Question: when can billing ship?")
    assert "deploys every Friday" in prompt


@pytest.mark.django_db
def test_search_memory_reformulates_twice(caller, llm):
    reformulating(caller, rounds=2)
    ids = seed(caller)
    llm.enqueue(
        llm.CHAT_COMPLETIONS,
        reply('```json\n{"sufficient": false}\n```'),
        reply("billing deploy schedule"),
        reply('{"sufficient": false}'),
        reply('"release freeze quarter-end"'),
    )
    data = search_tool(caller, limit=10)
    assert data["queries"] == [
        "when can billing ship?",
        "billing deploy schedule",
        "release freeze quarter-end",
    ]
    result_ids = [r["memory"]["id"] for r in data["results"]]
    assert sorted(result_ids) == sorted(ids.values())  # merged by id, no duplicates
    chats = [r.json() for r in llm.requests_to(llm.CHAT_COMPLETIONS)]
    assert len(chats) == 4  # two rounds: check + reformulate each, then the round limit
    assert "- billing deploy schedule" in chats[3]["messages"][1]["content"]


@pytest.mark.django_db
def test_search_memory_checker_failure_degrades(caller, llm):
    reformulating(caller)
    ids = seed(caller)
    llm.enqueue(llm.CHAT_COMPLETIONS, ScriptedResponse(status=500, json=error_payload("boom")))
    data = search_tool(caller)
    assert data["degraded"] == ["sufficiency_check"]
    assert ids["deploy"] in [r["memory"]["id"] for r in data["results"]]

    llm.enqueue(llm.CHAT_COMPLETIONS, reply("I think so, yes"))  # not a JSON verdict
    assert search_tool(caller)["degraded"] == ["sufficiency_check"]


@pytest.mark.django_db
def test_search_memory_without_llm_says_so(caller, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    reformulating(caller)
    seed(caller)
    data = search_tool(caller)
    assert data["degraded"] == ["reformulation_unavailable"] and data["results"]


@pytest.mark.django_db
def test_search_memory_stops_at_the_companys_max_reformulation_rounds(caller, llm):
    reformulating(caller, rounds=1)
    seed(caller)
    llm.enqueue(
        llm.CHAT_COMPLETIONS,
        reply('{"sufficient": false}'),
        reply("billing deploy schedule"),
        reply('{"sufficient": false}'),
        reply('"release freeze quarter-end"'),
    )
    data = search_tool(caller, limit=10)
    # one round (check + reformulate) where the default allows two
    assert data["queries"] == ["when can billing ship?", "billing deploy schedule"]
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == 2
