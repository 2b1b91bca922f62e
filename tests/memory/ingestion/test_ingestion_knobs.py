"""``memory.extraction`` / ``conversation`` / ``dream`` knobs without a test of their own:
each one set for the company changes the request sent to the local OpenAI-wire server or
what is stored."""

from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.ingestion.models import JournalEntry
from memory.ingestion.services.context import conversation_summary_refresh
from memory.ingestion.services.dream import agent_dream
from memory.ingestion.services.extraction import conversation_extract
from tests.memory.factories import MemoryFactory
from tests.memory.ingestion.conftest import configure, fact, flush, reply
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db

BILLING = "Ana said billing deploys move to Fridays at noon UTC."


@pytest.mark.parametrize("relevant", [1, 2])
def test_extraction_request_is_the_companys(relevant, caller, llm):
    configure(
        caller.company,
        extraction={
            "model": "extractor-x",
            "temperature": 0.4,
            "max_facts_per_run": 1,
            "relevant_memories": relevant,
            "store_turns": False,
        },
    )
    known = [
        MemoryFactory(agent=caller.agent, company=caller.company, category="semantic", content=text)
        for text in ("Billing deploys used to be on Tuesdays.", "Billing deploys at noon UTC.")
    ]
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys on Fridays."), fact("Ana leads billing.")]})
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "succeeded", run.reason
    body = llm.requests_to(llm.CHAT_COMPLETIONS)[0].json()
    assert (body["model"], body["temperature"]) == ("extractor-x", 0.4)
    prompt = "\n".join(message["content"] for message in body["messages"])
    assert "At most 1 facts" in prompt
    assert sum(f"id={memory.pk}" in prompt for memory in known) == relevant
    # the answer's second fact is over max_facts_per_run: only the first is stored
    assert run.added == 1
    assert set(Memory.objects.filter(agent=caller.agent).values_list("content", flat=True)) == {
        memory.content for memory in known
    } | {"Billing deploys on Fridays."}


@pytest.mark.parametrize("seconds", [60, 600])
def test_retry_backoff_seconds_is_the_companys(seconds, caller, llm):
    configure(caller.company, extraction={"retry_backoff_seconds": seconds})
    conversation = flush(caller.agent, [BILLING])
    llm.enqueue(llm.CHAT_COMPLETIONS, ScriptedResponse(status=503, json=error_payload("down")))
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "failed"
    # by design (durable job): the run itself carries its attempts and back-off
    assert run.attempts == 1
    assert run.next_attempt_at - run.updated_at == timedelta(seconds=seconds)


def forty(i):  # exactly 10 tokens
    return f"m{i:02d} " + "x" * 36


@pytest.mark.parametrize("tokens", [50, 120])
def test_conversation_max_summary_tokens_is_the_companys(tokens, caller, llm):
    configure(
        caller.company,
        conversation={"summary_threshold_tokens": 60, "max_summary_tokens": tokens},
    )
    conversation = flush(caller.agent, [forty(i) for i in range(8)])
    reply(llm, "The user sent numbered filler messages.")
    assert conversation_summary_refresh(conversation=conversation) is True
    body = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()
    assert body["max_tokens"] == tokens * 2
    assert f"at most {tokens} tokens" in body["messages"][0]["content"]


def _today():
    return timezone.now().astimezone(UTC).date()


@pytest.mark.parametrize("days", [2, 7])
def test_dream_request_is_the_companys(days, caller, llm):
    configure(
        caller.company, dream={"lookback_days": days, "max_core_tokens": 99, "temperature": 0.7}
    )
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys every Friday.")]})
    conversation_extract(conversation=conversation, force=True)
    entries = JournalEntry.objects.filter(agent=caller.agent)
    written = entries.update(day=_today() - timedelta(days=4))
    assert written >= 1
    reply(llm, {"core_summary": "Billing deploys Fridays.", "diary": "Noted."})
    run = agent_dream(agent=caller.agent)
    assert run.journal_from == _today() - timedelta(days=days - 1)
    # 4-day-old journal entries are inside a 7-day window, outside a 2-day one
    assert run.journal_entries == (written if days == 7 else 0)
    if days == 7:
        body = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()
        assert body["temperature"] == 0.7
        assert "at most 99 tokens" in body["messages"][0]["content"]
        assert "Billing deploys every Friday." in body["messages"][1]["content"]
