"""The context tier: running summary + recent messages within a token budget."""

import pytest

from memory.ingestion.models import Conversation
from memory.ingestion.services.context import conversation_summary_refresh
from memory.ingestion.tasks import extract_conversation
from tests.memory.ingestion.conftest import configure, flush, reply

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversations/chat-1/context"


def forty(i):  # exactly 10 tokens
    return f"m{i:02d} " + "x" * 36


def test_recent_messages_that_fit_in_order(caller):
    flush(caller.agent, [forty(i) for i in range(10)])
    response = caller.client.post(URL, {"token_budget": 35}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert [m["seq"] for m in body["messages"]] == [8, 9, 10]
    assert body["first_included_seq"] == 8
    assert body["omitted_messages"] == 7
    assert body["summary_through_seq"] == 0
    # the 5 tokens left hold one excerpt line? no: an excerpt of a 40-char message is 12
    assert body["summary_truncated"] is False
    assert body["tokens_used"] == 30
    assert body["chat"] == [{"role": "user", "content": forty(i)} for i in (7, 8, 9)]


def test_truncation_fallback_fills_the_rest_with_excerpts(caller):
    long = [f"long{i} " + "word " * 80 for i in range(10)]  # 100+ tokens each
    flush(caller.agent, long)
    body = caller.client.post(URL, {"token_budget": 260}, format="json").json()
    assert [m["seq"] for m in body["messages"]] == [9, 10]
    assert body["summary_truncated"] is True
    # one excerpt (at most 160 characters, 41 tokens) of the newest message left out fits,
    # cut at a word boundary, never inside a word, and marked
    excerpt = "[8] user: " + " ".join(long[7].split())[:159].rsplit(" ", 1)[0] + "…"
    assert body["summary"] == excerpt
    assert body["tokens_used"] == 2 * 101 + 41
    assert body["omitted_messages"] == 8
    assert body["chat"][0] == {
        "role": "system",
        "content": f"Summary of the earlier conversation:\n{excerpt}",
    }


def test_llm_summary_is_updated_incrementally_over_the_threshold(caller, llm):
    configure(caller.company, conversation={"summary_threshold_tokens": 60})
    conversation = flush(caller.agent, [forty(i) for i in range(5)])
    assert conversation_summary_refresh(conversation=conversation) is False  # 50 ≤ 60
    conversation = flush(caller.agent, [forty(i) for i in range(5, 8)])
    reply(llm, "The user sent numbered filler messages m00 to m04.")
    assert conversation_summary_refresh(conversation=conversation) is True
    conversation.refresh_from_db()
    # 80 tokens unsummarised; the newest 30 (threshold/2) stay verbatim
    assert conversation.summary_through_seq == 5
    assert conversation.summary == "The user sent numbered filler messages m00 to m04."
    prompt = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()["messages"][1]["content"]
    assert "[5] user: m04" in prompt and "m05" not in prompt

    body = caller.client.post(URL, {"token_budget": 1000}, format="json").json()
    assert body["summary"] == "The user sent numbered filler messages m00 to m04."
    assert [m["seq"] for m in body["messages"]] == [6, 7, 8]
    assert body["omitted_messages"] == 0

    # incremental: the next fold sends the previous summary with only the new messages
    conversation = flush(caller.agent, [forty(i) for i in range(8, 13)])
    reply(llm, "Filler m00 to m09.")
    assert conversation_summary_refresh(conversation=conversation) is True
    prompt = llm.requests_to(llm.CHAT_COMPLETIONS)[-1].json()["messages"][1]["content"]
    assert "numbered filler messages m00 to m04" in prompt
    assert "m04 xxx" not in prompt and "[6] user: m05" in prompt


def test_summary_falls_back_to_truncation_without_llm(caller, no_llm):
    configure(caller.company, conversation={"summary_threshold_tokens": 60})
    conversation = flush(caller.agent, [forty(i) for i in range(8)])
    assert conversation_summary_refresh(conversation=conversation) is True
    conversation.refresh_from_db()
    assert conversation.summary_through_seq == 5
    assert conversation.summary.splitlines() == [f"[{i + 1}] user: {forty(i)}" for i in range(5)]


def test_the_task_refreshes_the_summary_after_extracting(caller, llm):
    configure(
        caller.company,
        conversation={"summary_threshold_tokens": 60},
        extraction={"debounce_seconds": 0},
    )
    conversation = flush(caller.agent, [forty(i) for i in range(8)])
    reply(llm, {"facts": []})
    reply(llm, "Summary by the task.")
    assert extract_conversation(conversation.pk) == "succeeded"
    conversation = Conversation.objects.get(pk=conversation.pk)
    assert (conversation.summary, conversation.summary_through_seq) == ("Summary by the task.", 5)


def test_context_validation_and_isolation(caller, peer):
    flush(caller.agent, ["hello"])
    bad = caller.client.post(URL, {"token_budget": 0}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "token_budget"
    unknown = caller.client.post(URL, {"token_budget": 10, "query": "x"}, format="json")
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "query"
    assert peer.client.post(URL, {"token_budget": 10}, format="json").status_code == 404
