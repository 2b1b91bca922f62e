"""Concurrent near-duplicate stores: the write gate lets exactly one through.

The racing stores run on their own connections in threads; the test itself is a
``transactional_db`` test (autocommit), so they see its setup. Stores write audit entries,
so the post-test flush must empty append-only tables (``allow_flush_of_append_only_tables``).
"""

import threading

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest
from memory.core.models.memory import Memory
from memory.core.services.edit import memory_update
from memory.core.services.store import _gate_version, memory_store, memory_store_batch
from tests.memory.core.test_write_locks import BlockingEmbedder, blocked
from tests.orgmemory.conftest import allow_flush_of_append_only_tables  # noqa: F401
from tests.persistence.factories import AgentFactory


class ConstantEmbedder:
    embedder_id = "test:constant"
    dims = 384

    def embed(self, texts):
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

    def embed_one(self, text):
        return self.embed([text])[0]


def in_thread(fn, *args):
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out["value"]


@pytest.mark.usefixtures("allow_flush_of_append_only_tables")
def test_racing_duplicates_store_once():
    _race(AgentFactory())


def _race(agent):
    threads = 8
    barrier = threading.Barrier(threads)
    results, errors = [], []

    def worker(i):
        try:
            barrier.wait()
            results.append(
                memory_store(
                    agent=agent,
                    request=MemoryStoreRequest(
                        content=f"The release train leaves every Tuesday{'!' * i}",
                        category="semantic",
                    ),
                    embedder=ConstantEmbedder(),
                )
            )
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert errors == []
    rows = list(Memory.objects.filter(agent_id=agent.pk))
    assert len(rows) == 1
    assert sorted(r.deduplicated for r in results) == [False] + [True] * (threads - 1)
    assert {r.id for r in results} == {rows[0].id}


# --- the second pass runs only when the groups changed in between ---------------------------


def gate_passes(queries) -> int:
    """The gate's statements among ``queries`` (its query string sets the planner flag)."""
    return sum("enable_nestloop" in q["sql"] for q in queries.captured_queries)


def semantic(content: str) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=content, category="semantic")


@pytest.mark.django_db
def test_a_store_runs_the_gate_once_when_nothing_changed_in_between():
    agent = AgentFactory()
    first = memory_store(agent=agent, request=semantic("Ana leads the billing team."))
    with CaptureQueriesContext(connection) as fresh:
        other = memory_store(
            agent=agent,
            request=semantic("Kafka keeps data for a week."),
            embedder=ConstantEmbedder(),
        )
    with CaptureQueriesContext(connection) as twin:
        again = memory_store(agent=agent, request=semantic("ana leads the billing team"))
    assert (gate_passes(fresh), gate_passes(twin)) == (1, 1)
    assert (other.stored, other.deduplicated) == (True, False)
    assert (again.id, again.deduplicated) == (first.id, True)
    assert Memory.objects.filter(agent=agent).count() == 2


@pytest.mark.usefixtures("allow_flush_of_append_only_tables")
def test_a_duplicate_committed_between_the_passes_is_caught_by_the_second():
    agent = AgentFactory()
    embedder = BlockingEmbedder()
    passes = {}

    def write():
        with CaptureQueriesContext(connection) as queries:
            result = memory_store(
                agent=agent,
                request=semantic("The release train leaves Tuesdays."),
                embedder=embedder,
            )
        passes["n"] = gate_passes(queries)
        return result

    with blocked(write, embedder) as out:
        # the first pass found nothing; a near duplicate commits before the lock is taken
        racer = memory_store(
            agent=agent,
            request=semantic("the release train leaves tuesdays"),
            embedder=ConstantEmbedder(),
        )
    assert passes["n"] == 2
    assert (out["value"].id, out["value"].deduplicated) == (racer.id, True)
    assert [m.pk for m in Memory.objects.filter(agent=agent)] == [racer.id]


@pytest.mark.usefixtures("allow_flush_of_append_only_tables")
def test_a_twin_deleted_between_the_passes_no_longer_counts():
    agent = AgentFactory()
    twin = memory_store(
        agent=agent, request=semantic("Ana leads the billing team."), embedder=ConstantEmbedder()
    )
    embedder = BlockingEmbedder()
    passes = {}

    def write():
        with CaptureQueriesContext(connection) as queries:
            result = memory_store_batch(
                agent=agent,
                requests=[semantic("ana leads the billing team"), semantic("Kafka keeps a week.")],
                embedder=embedder,
            )
        passes["n"] = gate_passes(queries)
        return result

    with blocked(write, embedder) as out:
        Memory.objects.filter(pk=twin.id).delete()
    assert passes["n"] == 2
    first, second = out["value"]
    assert (first.deduplicated, first.embedding_status, second.deduplicated) == (
        False,
        "pending",
        False,
    )
    assert Memory.objects.filter(agent=agent).count() == 2


@pytest.mark.usefixtures("allow_flush_of_append_only_tables")
def test_a_write_to_another_group_between_the_passes_changes_nothing():
    agent = AgentFactory()
    embedder = BlockingEmbedder()
    passes = {}

    def write():
        with CaptureQueriesContext(connection) as queries:
            result = memory_store(
                agent=agent,
                request=semantic("The release train leaves Tuesdays."),
                embedder=embedder,
            )
        passes["n"] = gate_passes(queries)
        return result

    with blocked(write, embedder) as out:
        memory_store(
            agent=agent,
            request=MemoryStoreRequest(
                content="The release train leaves Tuesdays.", category="episodic"
            ),
            embedder=ConstantEmbedder(),
        )
        memory_store(
            agent=AgentFactory(company=agent.company),
            request=semantic("The release train leaves Tuesdays."),
            embedder=ConstantEmbedder(),
        )
    assert passes["n"] == 1
    assert (out["value"].stored, out["value"].deduplicated) == (True, False)


@pytest.mark.django_db
def test_the_change_counter_moves_on_what_the_gate_reads_only():
    agent = AgentFactory()
    stored = memory_store(agent=agent, request=semantic("Ana leads the billing team."))
    requests = [semantic("anything")]
    episodic = [MemoryStoreRequest(content="anything", category="episodic")]

    def versions():
        return (_gate_version(agent, requests), _gate_version(agent, episodic))

    start = versions()
    Memory.objects.filter(pk=stored.id).update(embedding_status="pending")
    assert versions() == start  # the backfill's column: not read by the gate
    memory_update(agent=agent, memory_id=stored.id, request=MemoryUpdateRequest(confidence=0.5))
    assert versions() == start
    memory_update(
        agent=agent, memory_id=stored.id, request=MemoryUpdateRequest(content="Ana runs billing.")
    )
    assert versions() == (start[0] + 1, start[1])
    memory_update(
        agent=agent, memory_id=stored.id, request=MemoryUpdateRequest(category="episodic")
    )
    assert versions() == (start[0] + 2, start[1] + 1)  # moved out of one group, into another
    Memory.objects.filter(pk=stored.id).delete()
    assert versions() == (start[0] + 2, start[1] + 2)
