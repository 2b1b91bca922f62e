"""Query counts: a flush and the list endpoints cost a constant number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.memory.interfaces.api.test_conversations import URL, flush

pytestmark = pytest.mark.django_db


def count(fn):
    with CaptureQueriesContext(connection) as ctx:
        response = fn()
    assert response.status_code < 300, response.content
    return len(ctx.captured_queries), [q["sql"][:120] for q in ctx.captured_queries]


def test_flush_and_listing_query_counts(caller):
    flush(caller)  # creates the conversation and its schedule
    few, _ = count(lambda: flush(caller, messages=[{"role": "user", "content": "a"}] * 2))
    many, _ = count(lambda: flush(caller, messages=[{"role": "user", "content": "b"}] * 50))
    assert few == many
    listed, _ = count(lambda: caller.client.get(URL.format("chat-1"), {"page_size": 5}))
    listed_more, _ = count(lambda: caller.client.get(URL.format("chat-1"), {"page_size": 50}))
    assert listed == listed_more
    runs, _ = count(lambda: caller.client.get("/api/v1/conversations/chat-1/extractions"))
    convs, _ = count(lambda: caller.client.get("/api/v1/conversations"))
    # flush: key, savepoint, lock the conversation, insert the messages, update it, push the
    # schedule, release; lists: key, (count/)page — constant in the page size
    assert (few, listed, runs, convs) == (7, 3, 3, 2)
