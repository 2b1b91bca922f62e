"""A user's first week with no LLM configured, run from outside against the real server.

``manage.py serve`` runs with ``SYNTHORG_LLM_BASE_URL`` empty; the steps are
:mod:`tests.e2e.scenario`'s. Every deterministic path must deliver: rule lessons, verbatim
conversation memories, a rule-drafted evolver proposal that, once approved, is an org skill
in every agent's context.
"""

from __future__ import annotations

import httpx
import pytest

from tests.e2e import scenario
from tests.e2e.scenario import CONVERSATION, ok
from tests.support.browser import browser  # noqa: F401  (a fixture)
from tests.synthorg.test_recovery import (  # noqa: F401  (test_database_url is a fixture)
    serving,
    test_database_url,
)

CONFIG = {
    "memory": {
        # rule lessons have confidence 0.6: the threshold lets them count for promotion
        "procedural": {"evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}},
        "extraction": {"debounce_seconds": 0},
    }
}


@pytest.mark.django_db(transaction=True)
def test_first_week_without_an_llm(test_database_url, django_db_blocker, browser):  # noqa: F811
    company, keys, operator = scenario.setup_company(CONFIG)
    env = scenario.serve_env(test_database_url)
    with serving(env, "--web-workers", "1") as (_serve, port):
        base = f"http://127.0.0.1:{port}"
        agents = {name: scenario.client(base, key) for name, key in keys.items()}
        try:
            health = ok(httpx.get(f"{base}/healthz", timeout=30))
            assert health["checks"]["llm"]["configured"] is False, health

            scenario.store_and_search(base, agents, keys)
            searches = {name: ["when is billing deployed?"] for name in agents}
            searches["reviewer"].insert(0, "who signs off schema migrations?")
            scenario.assert_searches_logged(company, django_db_blocker, searches)
            scenario.report_failures(agents, method="rule")

            planner = agents["planner"]
            scenario.flush_conversation(planner, CONVERSATION)
            runs = scenario.wait_for_runs(
                planner,
                lambda runs: (
                    runs and all(run["status"] not in ("queued", "running") for run in runs)
                ),
                "the conversation's extraction run",
            )
            assert [(run["status"], run["method"]) for run in runs] == [("succeeded", "verbatim")]
            assert CONVERSATION[2]["content"] in scenario.search_contents(
                planner, "which cluster does staging use?"
            )

            scenario.make_due_now(django_db_blocker, scenario.evolver_schedule(company))
            item = scenario.wait_for_approval_item(company, django_db_blocker)
            assert item.metadata["method"] == "rule"
            scenario.approve_in_console(base, browser, item, operator)
            scenario.assert_org_skill_in_every_context(company, agents, django_db_blocker)
        finally:
            for agent in agents.values():
                agent.close()
