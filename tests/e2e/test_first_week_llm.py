"""A user's first week with an LLM — and an LLM outage in the middle — run from outside.

The twin of ``test_first_week.py`` (the steps are :mod:`tests.e2e.scenario`'s). The LLM is
the strict stand-in (``tests/support/llm_provider.py``) with Ollama's profile: it serves one
model, answers 404 for any other, and wraps JSON in prose and a fence. The server is given
its base URL only (``SYNTHORG_LLM_BASE_URL``); the model is discovered from ``/models``.

1. Agents store and search (one through MCP); Search-and-Ask answers with the LLM; failure
   reports become LLM lessons (``method: llm``).
2. The outage: the stand-in answers every completion with Ollama's 503 ("server busy").
   More reports are acknowledged and their captures fail with a recorded reason and a
   ``capture_next_attempt_at``; a flushed conversation's LLM extraction fails and is due
   again, and its turns are stored verbatim (first, as always); Search-and-Ask answers plain
   search results and says ``degraded``.
3. The stand-in recovers; the retry schedules are moved to now (the clock, not the
   product): every failed capture ends captured by the LLM, extraction adds its facts on top
   of the verbatim memories (which stay), and every acknowledged memory, report and capture
   is there.
4. The evolver runs (an LLM draft); the admin moves the company from the tool-based strategy
   (Search-and-Ask) to the context strategy; the operator approves the item in Chromium; the
   org skill is in every agent's context.
"""

from __future__ import annotations

import json

import httpx
import pytest
from django.utils import timezone

from memory.ingestion.prompts import EXTRACTION_SYSTEM, SUMMARY_SYSTEM
from memory.procedural.evolver.drafting import SYSTEM_PROMPT as EVOLVER_SYSTEM
from memory.procedural.proposer import FAILURE_SYSTEM_PROMPT
from memory.procedural.services.capture import RULE_STANDS_IN
from memory.prompting.llm_checks import REFORMULATION_SYSTEM, SUFFICIENCY_SYSTEM
from persistence.services.companies import company_config_set
from tests.e2e import scenario
from tests.e2e.scenario import FINISHED, ok
from tests.support.browser import browser  # noqa: F401  (a fixture)
from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn
from tests.synthorg.test_recovery import (  # noqa: F401  (test_database_url is a fixture)
    serving,
    test_database_url,
)

# Search-and-Ask is the tool-based strategy's search_memory (query reformulation on)
TOOL_BASED = {
    "strategy": "tool_based",
    "query_reformulation_enabled": True,
    "max_reformulation_rounds": 1,
}
CONFIG = {
    "memory": {
        "procedural": {"evolver": {"enabled": True}},
        # a flush of this many tokens is extracted at once (no wait for the debounce tick)
        "extraction": {"debounce_seconds": 0, "max_pending_tokens": 50},
        "retrieval": TOOL_BASED,
    }
}
# Before the evolver's item is approved the admin moves the company to the context strategy,
# whose /memories/context carries org skills into every agent's prompt.
CONTEXT_CONFIG = {"memory": {**CONFIG["memory"], "retrieval": {"strategy": "context"}}}


def lesson(name: str, condition: str, action: str, confidence: float = 0.9) -> dict:
    return {
        "name": name,
        "discovery": f"{condition} — {action}",
        "condition": condition,
        "action": action,
        "rationale": "The execution report shows it.",
        "execution_steps": [action],
        "confidence": confidence,
        "tags": ["deploy"],
        "scope": "agent",
    }


HELM = lesson(
    "helm-upgrade-timeouts",
    "A helm upgrade of billing times out at the default 300s.",
    "Run helm upgrade with --timeout 600s and --wait.",
)


def outage_report(title: str, category: str, message: str) -> dict:
    return {
        "task_type": "operations",
        "task_title": title,
        "outcome": "failed",
        "error": {"category": category, "message": message},
        "tool_calls": [{"name": "kubectl", "status": "failed"}],
        "retry_count": 1,
    }


# Posted during the outage: two agents per error category, under the evolver's three, so
# the only pattern it can promote is the helm one every agent reported before.
OUTAGE_REPORTS = [
    ("planner", outage_report("Rotate the billing TLS certificate", "permission", "403 on secret")),
    ("deployer", outage_report("Scale the billing workers", "permission", "403 on deployment")),
    (
        "planner",
        outage_report("Upgrade the billing Postgres client", "dependency", "libpq too old"),
    ),
    ("deployer", outage_report("Pin the billing base image", "dependency", "image tag vanished")),
]
LESSONS = {
    report["task_title"]: lesson(
        f"lesson-{index}",
        f"{report['task_title']} fails with {report['error']['message']}.",
        f"Before '{report['task_title'].lower()}', check {report['error']['category']} first.",
    )
    for index, (_name, report) in enumerate(OUTAGE_REPORTS)
}
OUTAGE_CONVERSATION = [
    {"role": "user", "content": "Can you deploy billing v2.14 to staging today, please?"},
    {"role": "assistant", "content": "Yes: staging deploys run from the release branch."},
    {
        "role": "user",
        "content": "Remember that staging uses the eu-1 cluster and its own database, and "
        "that the billing team freezes staging deploys on the last Friday of each month.",
    },
]
EXTRACTED = [
    "The billing staging environment runs in cluster eu-1 with a dedicated database.",
    "Billing staging deploys are frozen on the last Friday of every month.",
]


def model_answer(body: dict) -> str:
    """What a competent model means to answer, by task (the profile decides the wire form)."""
    system = body["messages"][0]["content"]
    prompt = body["messages"][-1]["content"]
    if system == FAILURE_SYSTEM_PROMPT:
        for title, proposal in LESSONS.items():
            if title in prompt:
                return json.dumps(proposal)
        return json.dumps(HELM)
    if system == EVOLVER_SYSTEM:
        return json.dumps(HELM)
    if system.startswith(EXTRACTION_SYSTEM[:60]):
        facts = [
            {"content": c, "category": "semantic", "confidence": 0.9, "tags": [], "supersedes": []}
            for c in EXTRACTED
        ]
        return json.dumps({"facts": facts})
    if system == SUFFICIENCY_SYSTEM:
        return json.dumps({"sufficient": True})
    if system == REFORMULATION_SYSTEM:
        return "billing deploy schedule"
    if system.startswith(SUMMARY_SYSTEM[:60]):
        return "The team discussed billing deploys to staging."
    return "ok"


def search_and_ask(agent: httpx.Client, query: str) -> dict:
    called = ok(
        agent.post(
            "/memories/tools/call", json={"name": "search_memory", "arguments": {"query": query}}
        )
    )
    return called["data"]


def recover_now(django_db_blocker, company) -> None:
    """The clock, not the product: failed captures and the failed extraction are due now,
    and so are the schedules that retry them and the evolver's cycle."""
    from memory.ingestion.models import Conversation, ExtractionRun
    from memory.procedural.models import ExecutionCapture

    with django_db_blocker.unblock():
        now = timezone.now()
        ExecutionCapture.objects.filter(company=company, next_attempt_at__isnull=False).update(
            next_attempt_at=now
        )
        Conversation.objects.filter(company=company, extraction_due_at__isnull=False).update(
            extraction_due_at=now
        )
        ExtractionRun.objects.filter(company=company, next_attempt_at__isnull=False).update(
            next_attempt_at=now
        )
    scenario.make_due_now(
        django_db_blocker,
        scenario.job_schedule("procedural.capture"),
        scenario.job_schedule("ingestion.extraction"),
        scenario.evolver_schedule(company),
    )


@pytest.mark.django_db(transaction=True)
def test_first_week_with_an_llm_and_an_outage(
    test_database_url,  # noqa: F811
    django_db_blocker,
    browser,  # noqa: F811
):
    company, keys, operator = scenario.setup_company(CONFIG)
    profile = PROFILES["ollama"]
    with LLMProviderStandIn(profile, answer=model_answer) as llm:
        env = scenario.serve_env(
            test_database_url, llm_base_url=llm.base_url, SYNTHORG_LLM_MAX_RETRIES="1"
        )
        with serving(env, "--web-workers", "1") as (_serve, port):
            base = f"http://127.0.0.1:{port}"
            agents = {name: scenario.client(base, key) for name, key in keys.items()}
            planner = agents["planner"]
            try:
                health = ok(httpx.get(f"{base}/healthz", timeout=30))
                assert health["checks"]["llm"] == {"ok": True, "configured": True, "model": None}

                # --- 1. the LLM answers --------------------------------------------------
                stored = scenario.store_and_search(base, agents, keys)
                asked = search_and_ask(planner, "when is billing deployed?")
                assert (asked["degraded"], asked["queries"]) == ([], ["when is billing deployed?"])
                assert asked["results"], asked
                first = scenario.report_failures(agents, method="llm")

                # --- 2. the outage -------------------------------------------------------
                llm.fault = Fault.SERVER_ERROR
                posted = scenario.post_reports(agents, OUTAGE_REPORTS)
                meanwhile_lessons = scenario.wait_for_reports(
                    agents, posted, lambda r: r["capture_status"] not in FINISHED, "captured"
                )
                for report in meanwhile_lessons:  # never worse than no LLM
                    assert (report["capture_status"], report["capture_method"]) == (
                        "captured",
                        "rule",
                    ), report
                    assert report["capture_reason"].startswith("llm_error: LLMTransientError"), (
                        report
                    )
                    assert "503" in report["capture_reason"], report
                    assert report["capture_reason"].endswith(f"({RULE_STANDS_IN})"), report
                    assert report["capture_next_attempt_at"] is not None, report
                    assert report["memory_id"] is not None, report

                scenario.flush_conversation(planner, OUTAGE_CONVERSATION)
                runs = scenario.wait_for_runs(
                    planner,
                    lambda runs: (
                        any(run["trigger"] == "turns" for run in runs)
                        and any(run["status"] == "failed" for run in runs)
                    ),
                    "the conversation's turns stored verbatim and the LLM run failed",
                )
                assert {(r["status"], r["method"]) for r in runs if r["trigger"] != "turns"} == {
                    ("failed", "llm")
                }, runs
                assert all("503" in r["error"] for r in runs if r["status"] == "failed"), runs
                [meanwhile] = [r for r in runs if r["trigger"] == "turns"]
                assert (meanwhile["status"], meanwhile["method"], meanwhile["added"]) == (
                    "succeeded",
                    "verbatim",
                    3,
                )
                conversation = scenario.conversation(planner)
                assert (
                    conversation["extracted_through_seq"],
                    conversation["verbatim_through_seq"],
                ) == (0, 3)
                [failed] = [r for r in runs if r["status"] == "failed"]
                assert failed["attempts"] >= 1 and failed["next_attempt_at"] is not None, runs
                turn = OUTAGE_CONVERSATION[2]["content"]
                assert turn in scenario.search_contents(planner, "which cluster does staging use?")

                asked = search_and_ask(planner, "which cluster does staging use?")
                assert "sufficiency_check" in asked["degraded"], asked
                assert turn in [hit["memory"]["content"] for hit in asked["results"]], asked

                # --- 3. recovery ---------------------------------------------------------
                llm.fault = None
                recover_now(django_db_blocker, company)
                recovered = scenario.wait_for_reports(
                    agents, posted, lambda r: r["capture_method"] == "llm", "recovered"
                )
                for (name, report), after in zip(OUTAGE_REPORTS, recovered, strict=True):
                    assert (after["capture_method"], after["capture_reason"]) == ("llm", ""), after
                    assert after["capture_attempts"] >= 2, after
                    memory = ok(agents[name].get(f"/memories/{after['memory_id']}"))
                    assert (memory["category"], memory["content"]) == (
                        "procedural",
                        LESSONS[report["task_title"]]["discovery"],
                    ), memory

                runs = scenario.wait_for_runs(
                    planner,
                    lambda runs: any(
                        r["method"] == "llm" and r["status"] == "succeeded" for r in runs
                    ),
                    "the LLM's extraction after the outage",
                )
                [extracted] = [
                    r for r in runs if r["method"] == "llm" and r["status"] == "succeeded"
                ]
                assert (extracted["first_seq"], extracted["last_seq"], extracted["added"]) == (
                    1,
                    3,
                    2,
                )
                conversation = scenario.conversation(planner)
                assert (
                    conversation["extracted_through_seq"],
                    conversation["verbatim_through_seq"],
                ) == (3, 3)
                contents = scenario.search_contents(
                    planner, "staging cluster eu-1 database deploys"
                )
                assert set(EXTRACTED) <= set(contents), contents
                assert turn in contents, contents  # the verbatim memory stays

                # nothing acknowledged is missing
                for name, memory_ids in stored.items():
                    for memory_id in memory_ids:
                        assert ok(agents[name].get(f"/memories/{memory_id}"))["id"] == memory_id
                for name, agent in agents.items():
                    listed = ok(agent.get("/executions"))["results"]
                    expected = {rid for n, rid in first + posted if n == name}
                    assert {r["id"] for r in listed} == expected, (name, listed)
                    assert {r["capture_status"] for r in listed} == {"captured"}, listed
                    assert {r["capture_method"] for r in listed} == {"llm"}, listed

                # --- 4. the evolver, the operator, every agent ---------------------------
                with django_db_blocker.unblock():
                    company_config_set(company=company, data=CONTEXT_CONFIG)
                item = scenario.wait_for_approval_item(company, django_db_blocker)
                assert item.metadata["method"] == "llm", item.metadata
                scenario.approve_in_console(base, browser, item, operator)
                scenario.assert_org_skill_in_every_context(company, agents, django_db_blocker)

                # the model was discovered, never guessed: every completion named it
                assert {r.json()["model"] for r in llm.chat_requests} == set(profile.models)
            finally:
                for agent in agents.values():
                    agent.close()
