"""Ingestion fixtures: an OpenAI-compatible LLM server configured as the deployment's LLM,
and helpers to flush messages and script the extraction answers."""

import json

import pytest

from memory.ingestion.domain import MessageIn
from memory.ingestion.models import Conversation
from memory.ingestion.services.messages import conversation_messages_append
from persistence.services.companies import company_config_set
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, chat_completion_payload


def llm_settings(server: FakeOpenAIServer, **extra) -> dict:
    return {
        "BASE_URL": server.base_url,
        "API_KEY": "sk-test",
        "MODEL": "extract-model",
        "TIMEOUT": 5,
        "MAX_RETRIES": 0,
        "INPUT_COST_PER_MTOK": "1.00",
        "OUTPUT_COST_PER_MTOK": "2.00",
        **extra,
    }


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer(chat_reply='{"facts": []}') as server:
        settings.SYNTHORG_LLM = llm_settings(server)
        yield server


@pytest.fixture
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


def reply(server: FakeOpenAIServer, payload, *, status: int = 200, **usage) -> None:
    """Queue one chat answer: a dict/list is sent as JSON text, a str as is."""
    content = payload if isinstance(payload, str) else json.dumps(payload)
    server.enqueue(
        server.CHAT_COMPLETIONS,
        ScriptedResponse(status=status, json=chat_completion_payload(content, **usage)),
    )


def fact(content, category="semantic", confidence=0.9, tags=(), supersedes=()):
    return {
        "content": content,
        "category": category,
        "confidence": confidence,
        "tags": list(tags),
        "supersedes": [str(s) for s in supersedes],
    }


def flush(agent, texts, *, conversation="chat-1", role="user", **binding) -> Conversation:
    conversation_messages_append(
        agent=agent,
        conversation_id=conversation,
        messages=[MessageIn(role=role, content=t) for t in texts],
        **binding,
    )
    return Conversation.objects.get(agent=agent, external_id=conversation)


def configure(company, **memory):
    company_config_set(company=company, data={"memory": memory})


@pytest.fixture(autouse=True)
def _facts_only_with_an_llm(request):
    """Tests with the ``llm`` server are about the LLM's facts: their company keeps only
    those (``store_turns: false``). The default — the turns stored first, the facts on top —
    has tests of its own (``test_extraction.py``, ``store_turns``); a test that calls
    :func:`configure` itself sets ``store_turns`` there."""
    if "llm" in request.fixturenames and "company" in request.fixturenames:
        configure(request.getfixturevalue("company"), extraction={"store_turns": False})
