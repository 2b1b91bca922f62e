"""Two workers extracting the same conversation at once: exactly one claims the messages.

Real transactions: a ``transactional_db`` test (autocommit), the racing workers on their own
connections in threads, as in ``tests/memory/core/test_gate_concurrency.py``; stores write
audit entries, so the post-test flush empties append-only tables."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.core.models.memory import Memory
from memory.ingestion.models import Conversation, ExtractionRun
from memory.ingestion.services.extraction import conversation_extract
from synthorg.llm import OpenAICompatibleChatClient
from tests.memory.core.test_gate_concurrency import in_thread
from tests.memory.ingestion.conftest import fact, flush
from tests.orgmemory.conftest import allow_flush_of_append_only_tables  # noqa: F401
from tests.persistence.factories import AgentFactory
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, chat_completion_payload


@pytest.mark.usefixtures("allow_flush_of_append_only_tables")
def test_concurrent_workers_never_double_extract():
    agent = in_thread(AgentFactory)
    with FakeOpenAIServer() as server:
        _race(agent, server)


def _race(agent, server):
    import json

    # The LLM takes a while, so every worker is inside its run at the same time.
    answer = json.dumps({"facts": [fact("Billing deploys every Friday at noon UTC.")]})
    server.set_handler(
        server.CHAT_COMPLETIONS,
        lambda request: ScriptedResponse(json=chat_completion_payload(answer), delay=1.0),
    )
    conversation = in_thread(
        lambda: flush(agent, [f"message {i} about billing deploys" for i in range(5)])
    )
    workers = 4
    barrier = threading.Barrier(workers)
    results, errors = [], []
    due = timezone.now() + timedelta(minutes=5)

    def work():
        try:
            client = OpenAICompatibleChatClient(server.base_url, "m", max_retries=0, timeout=10)
            target = Conversation.objects.select_related("agent", "company").get(pk=conversation.pk)
            barrier.wait()
            results.append(conversation_extract(conversation=target, provider=client, now=due))
        except Exception as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    runs = [r for r in results if r is not None]
    extracted = [r for r in runs if r.status != "deferred"]
    assert len(extracted) == 1
    # The others found the company's LLM slot taken (synthorg.llm.slots): at most one
    # deferred row records that, whatever the number of workers.
    assert len(runs) - len(extracted) <= 1
    assert len(server.requests_to(server.CHAT_COMPLETIONS)) == 1

    def state():
        conv = Conversation.objects.get(pk=conversation.pk)
        return (
            sorted(
                ExtractionRun.objects.filter(conversation=conv)
                .exclude(status="deferred")
                .values_list("method", "status", "first_seq", "last_seq")
            ),
            conv.extracted_through_seq,
            # by design: the run's own lease was the claim; no run is left open
            ExtractionRun.objects.filter(conversation=conv, status__in=["queued", "running"])
            .values_list("pk", flat=True)
            .first(),
            Memory.objects.filter(agent=agent).count(),
        )

    # the five turns stored once (store_turns, the default), the LLM's one fact on top
    runs = [("llm", "succeeded", 1, 5), ("verbatim", "succeeded", 1, 5)]
    assert in_thread(state) == (runs, 5, None, 6)
