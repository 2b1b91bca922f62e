"""Concurrent near-duplicate stores: the write gate lets exactly one through.

The test's own connection sits in pytest-django's test transaction, which other connections
cannot see; so setup, the racing stores and the cleanup all run on their own (autocommit)
connections in threads. (A transactional test cannot be used: flushing would TRUNCATE the
append-only audit table, which its trigger forbids.)"""

import threading

import numpy as np
import pytest
from django.db import connection

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store
from persistence.models import Company
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


@pytest.mark.django_db
def test_racing_duplicates_store_once():
    agent = in_thread(AgentFactory)
    try:
        _race(agent)
    finally:
        in_thread(lambda: Company.objects.filter(pk=agent.company_id).delete())


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
    rows = in_thread(lambda: list(Memory.objects.filter(agent_id=agent.pk)))
    assert len(rows) == 1
    assert sorted(r.deduplicated for r in results) == [False] + [True] * (threads - 1)
    assert {r.id for r in results} == {rows[0].id}
