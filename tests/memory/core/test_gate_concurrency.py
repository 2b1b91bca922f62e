"""Concurrent near-duplicate stores: the write gate lets exactly one through.

The racing stores run on their own connections in threads; the test itself is a
``transactional_db`` test (autocommit), so they see its setup. Stores write audit entries,
so the post-test flush must empty append-only tables (``allow_flush_of_append_only_tables``).
"""

import threading

import numpy as np
import pytest
from django.db import connection

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store
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
