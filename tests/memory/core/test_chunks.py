"""Long memories are embedded whole, as overlapping windows (memory.core.chunking).

The company's embedder is a local OpenAI-wire server whose vectors are bags of words and which
reads only the first 1,000 characters of each input, as a real model reads only its first 256
tokens: without chunks, whatever a memory says after that is invisible to the dense leg.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from memory.core.chunking import OVERLAP_CHARS, WINDOW_CHARS, memory_windows
from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest
from memory.core.models.memory import Memory, MemoryChunk
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from memory.core.services.edit import memory_update
from memory.core.services.store import memory_store_batch
from memory.core.tasks import backfill_pending_embeddings
from persistence.services.companies import company_config_set
from persistence.services.erasure import agent_erase
from persistence.services.portability import content_export, content_import
from synthorg.errors import InvalidInputError
from tests.memory.wide_embedders import words_handler, words_server
from tests.persistence.factories import AgentFactory, CompanyFactory
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db

#: What the test embedder reads of each input (a real model's window, in characters).
MODEL_WINDOW = 1000
DIMS = 384
FILLER = " ".join(f"w{i}" for i in range(400))  # 400 distinct words, ≈ 1,900 characters
TAIL = "The database failover runbook: database failover needs a quorum."
LONG = f"{FILLER} {TAIL}"
WINDOWS = 3  # of LONG: 900 characters each, 150 shared by neighbours
DECOY = "Database backups run nightly after the billing export."


@pytest.fixture
def server():
    with words_server(DIMS, window=MODEL_WINDOW) as running:
        yield running


def use_server(company, server, **chunking) -> None:
    data = {
        "memory": {"embedder": {"model": "window-embed", "dims": DIMS, "base_url": server.base_url}}
    }
    if chunking:
        data["memory"]["chunking"] = chunking
    company_config_set(company=company, data=data)


@pytest.fixture
def agent(server):
    agent = AgentFactory(memory_level="persistent")
    use_server(agent.company, server)
    return agent


def store(agent, *contents, context=""):
    results = memory_store_batch(
        agent=agent,
        requests=[
            MemoryStoreRequest(content=c, context=context, category="semantic") for c in contents
        ],
        deduplicate=False,
    )
    return [Memory.objects.get(pk=r.id) for r in results]


def chunk_rows(memory) -> list[tuple[int, str]]:
    return list(
        MemoryChunk.objects.filter(memory=memory)
        .order_by("ordinal")
        .values_list("ordinal", "embedder_id")
    )


def dense(agent, text):
    return memory_search(
        agent=agent, query=MemoryQuery(text=text, limit=10), legs=("dense",), include_shared=False
    )


def test_a_phrase_past_the_window_finds_the_memory_once(agent):
    long, decoy = store(agent, LONG, DECOY)
    windows = memory_windows(LONG, max_windows=32, context_chars=0)
    assert len(windows) == WINDOWS and TAIL in windows[-1] and TAIL not in windows[1]
    assert long.chunk_count == WINDOWS - 1
    assert chunk_rows(long) == [(n, "openai:window-embed") for n in range(1, WINDOWS)]
    assert decoy.chunk_count == 0 and chunk_rows(decoy) == []

    result = dense(agent, "database failover")
    ids = [hit.memory.id for hit in result.hits]
    assert ids == [long.id, decoy.id]  # the long memory first, and only once
    # Its relevance is its best window's similarity: the window holding the tail.
    assert result.hits[0].relevance > result.hits[1].relevance > 0


def test_max_chunks_is_honoured(server):
    agent = AgentFactory(memory_level="persistent")
    use_server(agent.company, server, max_chunks=2)
    (long,) = store(agent, LONG)
    assert long.chunk_count == 1 and chunk_rows(long) == [(1, "openai:window-embed")]
    # Two windows reach ≈ 1,650 characters: the tail is for the sparse leg only.
    inputs = [t for r in server.requests_to(server.EMBEDDINGS) for t in r.json()["input"]]
    assert len(inputs) == 2 and all(TAIL not in text for text in inputs)


@pytest.mark.parametrize(
    ("context_chars", "embedded"),
    [(0, "Yes, book it."), (12, "Yes, book it.\nwhich flight")],
)
def test_context_chars_is_the_companys(context_chars, embedded, server):
    agent = AgentFactory(memory_level="persistent")
    use_server(agent.company, server, context_chars=context_chars)
    store(agent, "Yes, book it.", context="which flight should I book?")
    inputs = [t for r in server.requests_to(server.EMBEDDINGS) for t in r.json()["input"]]
    assert inputs == [embedded]


@pytest.mark.parametrize(
    ("chunking", "field"),
    [
        ({"max_chunks": 0}, "memory.chunking.max_chunks"),
        ({"max_chunks": 33}, "memory.chunking.max_chunks"),
        ({"context_chars": -1}, "memory.chunking.context_chars"),
        ({"context_chars": 4001}, "memory.chunking.context_chars"),
    ],
)
def test_chunking_bounds_are_refused_naming_the_field(chunking, field):
    company = CompanyFactory()
    before = company.config
    with pytest.raises(InvalidInputError) as caught:
        company_config_set(company=company, data={"memory": {"chunking": chunking}})
    assert caught.value.code == "invalid_company_config"
    assert [e["field"] for e in caught.value.errors] == [field]
    company.refresh_from_db()
    assert company.config == before


def test_context_is_bounded_and_never_drowns_the_content():
    short = memory_windows("Yes, book it.", "x" * 3000, max_windows=32, context_chars=300)
    assert short == ["Yes, book it.\n" + "x" * 300]
    # A first window full of content leaves no room: the context is for the sparse leg.
    long = memory_windows(LONG, "the question", max_windows=32, context_chars=300)
    assert "the question" not in "".join(long)
    assert memory_windows("Yes.", "the question", max_windows=32, context_chars=0) == ["Yes."]


def test_windows_overlap_and_cover_the_whole_content():
    windows = memory_windows(LONG, max_windows=32, context_chars=0)
    assert all(len(w) <= WINDOW_CHARS for w in windows)
    for left, right in itertools.pairwise(windows):
        shared = left[-OVERLAP_CHARS // 2 :]
        assert shared in right  # a phrase cut by a boundary is whole in the next window
    assert windows[0].startswith("w0 ") and windows[-1].endswith(TAIL)
    # Every word of the content is in some window.
    assert set(LONG.split()) == {word for w in windows for word in w.split()}


def test_editing_the_content_rewrites_the_chunks(agent):
    (memory,) = store(agent, LONG)
    memory_update(agent=agent, memory_id=memory.pk, request=MemoryUpdateRequest(content="Short."))
    memory.refresh_from_db()
    assert (memory.chunk_count, chunk_rows(memory)) == (0, [])
    memory_update(
        agent=agent, memory_id=memory.pk, request=MemoryUpdateRequest(content=LONG + " again")
    )
    memory.refresh_from_db()
    assert memory.chunk_count == WINDOWS - 1
    assert [n for n, _ in chunk_rows(memory)] == list(range(1, WINDOWS))
    assert dense(agent, "database failover").hits[0].memory.id == memory.pk


def test_the_backfill_embeds_every_window(agent, server):
    server.set_handler(
        server.EMBEDDINGS, lambda r: ScriptedResponse(status=401, json=error_payload("no"))
    )
    (memory,) = store(agent, LONG)
    assert (memory.embedding_status, memory.chunk_count, chunk_rows(memory)) == ("pending", 0, [])
    server.set_handler(server.EMBEDDINGS, words_handler(DIMS, MODEL_WINDOW))
    assert backfill_pending_embeddings() == 1
    memory.refresh_from_db()
    assert (memory.embedding_status, memory.chunk_count) == ("ready", WINDOWS - 1)
    assert [n for n, _ in chunk_rows(memory)] == list(range(1, WINDOWS))


def test_erasure_deletes_the_chunks_and_counts_memories(agent):
    long, _ = store(agent, LONG, DECOY)
    other = AgentFactory(company=agent.company, memory_level="persistent")
    (kept,) = store(other, LONG)
    report = agent_erase(agent=agent)
    assert report.counts["memories"] == 2  # the memories, not their chunk rows
    assert not MemoryChunk.objects.filter(memory_id=long.pk).exists()
    assert MemoryChunk.objects.filter(memory_id=kept.pk).count() == WINDOWS - 1


def _exported(agent) -> list[str]:
    return list(content_export(company=agent.company, agent=agent))


def test_export_import_carries_every_window(agent, server):
    long, _ = store(agent, LONG, DECOY)
    lines = _exported(agent)
    row = next(json.loads(line) for line in lines[1:] if json.loads(line).get("id") == str(long.pk))
    assert len(row["chunks"]) == WINDOWS - 1
    target = CompanyFactory()
    use_server(target, server)
    calls = len(server.requests_to(server.EMBEDDINGS))
    counts = content_import(company=target, lines=lines)["memory"]
    assert (counts.created, counts.embedded) == (2, 0)  # the exported vectors are reused
    assert len(server.requests_to(server.EMBEDDINGS)) == calls
    imported = Memory.objects.get(company=target, content=LONG)
    assert imported.chunk_count == WINDOWS - 1
    theirs = [
        np.asarray(v)
        for v in MemoryChunk.objects.filter(memory=imported)
        .order_by("ordinal")
        .values_list("embedding", flat=True)
    ]
    ours = [
        np.asarray(v)
        for v in MemoryChunk.objects.filter(memory=long)
        .order_by("ordinal")
        .values_list("embedding", flat=True)
    ]
    assert all(np.array_equal(a, b) for a, b in zip(theirs, ours, strict=True))
    assert len(theirs) == WINDOWS - 1


def test_import_embeds_again_when_the_windows_differ(agent, server):
    store(agent, LONG)
    lines = _exported(agent)
    target = CompanyFactory()
    use_server(target, server, max_chunks=2)  # two windows here, three in the export
    counts = content_import(company=target, lines=lines)["memory"]
    assert (counts.created, counts.embedded) == (1, 1)
    imported = Memory.objects.get(company=target)
    assert imported.chunk_count == 1 and [n for n, _ in chunk_rows(imported)] == [1]
