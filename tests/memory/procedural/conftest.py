"""Procedural-learning fixtures: config helpers and a proposer LLM on a local HTTP server."""

from __future__ import annotations

import json

import pytest

from persistence.services.companies import company_config_set
from tests.support.openai_server import FakeOpenAIServer

FAILED_REPORT = {
    "task_title": "Deploy billing service",
    "task_type": "deploy",
    "outcome": "failed",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [
        {"name": "helm_upgrade", "status": "failed", "error": "timeout", "duration_ms": 300000}
    ],
    "retry_count": 2,
    "turn_count": 9,
    "duration_ms": 312000,
    "recovery": "Retried twice with the same timeout.",
}

PROPOSAL = {
    "name": "helm-upgrade-timeouts",
    "discovery": "Helm upgrades of the billing service time out at 300s; raise --timeout.",
    "condition": "A helm upgrade of a large chart times out at the default 300s.",
    "action": "Run helm upgrade with --timeout 900s and --atomic.",
    "rationale": "The chart's pre-upgrade hook runs longer than the default 300s timeout.",
    "execution_steps": ["Check the hook duration", "Re-run with --timeout 900s --atomic"],
    "confidence": 0.9,
    "tags": ["helm", "deploy"],
    "scope": "agent",
}


def stored_rationale(report) -> str:
    """How the LLM's :data:`PROPOSAL` rationale is stored for :data:`FAILED_REPORT`: its
    words, then the evidence sentence computed from the report."""
    return (
        f"{PROPOSAL['rationale']} Evidence: 1 execution report (1 failed); task type 'deploy'; "
        "error category 'timeout'; failing tool `helm_upgrade`; 2 retries; "
        f"reported {report.created_at:%Y-%m-%d}."
    )


def set_procedural(company, **procedural) -> None:
    """Replace ``company``'s ``memory.procedural`` config section."""
    company_config_set(company=company, data={"memory": {"procedural": procedural}})


@pytest.fixture
def llm_server(settings):
    """An OpenAI-wire server answering every chat completion with :data:`PROPOSAL`."""
    with FakeOpenAIServer(chat_reply=json.dumps(PROPOSAL)) as server:
        settings.SYNTHORG_LLM = {
            **(getattr(settings, "SYNTHORG_LLM", None) or {}),
            "BASE_URL": server.base_url,
            "API_KEY": "test-key",
            "MODEL": "fake-chat",
            "MAX_RETRIES": 0,
            "TIMEOUT": 5,
        }
        yield server
