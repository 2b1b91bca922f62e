"""A slow embedder holds no lock another writer of the agent waits on.

Each test runs a write in a thread whose embedder blocks until released; while it is blocked,
the test's own connection (autocommit: a ``transactional_db`` test) takes the locks the write
will need with ``NOWAIT``, which fails at once if they are held. Events, not clocks.
"""

import threading
from contextlib import contextmanager

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from memory.core.consolidation.models import ArchivalMode
from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest
from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.services.archive import archive_restore, archived_from_memory
from memory.core.services.edit import memory_update
from memory.core.services.maintenance import run_maintenance
from memory.core.services.store import memory_store
from tests.memory.core.maintenance.conftest import configure, seed
from tests.memory.factories import MemoryFactory
from tests.orgmemory.conftest import allow_flush_of_append_only_tables  # noqa: F401
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.usefixtures("allow_flush_of_append_only_tables")


class BlockingEmbedder:
    """Signals ``started`` when called, then waits for ``release``."""

    embedder_id = "test:blocking"
    dims = 384

    def __init__(self):
        self.started = threading.Event()
        self.release = threading.Event()

    def embed(self, texts):
        self.started.set()
        assert self.release.wait(timeout=60), "the test never released the embedder"
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

    def embed_one(self, text):
        return self.embed([text])[0]


class ConstantEmbedder(BlockingEmbedder):
    def __init__(self):
        super().__init__()
        self.release.set()


@contextmanager
def blocked(write, embedder):
    """Run ``write`` in a thread and enter once its embedder is blocked; on exit release the
    embedder and wait for the write. Its result is ``out["value"]`` afterwards."""
    out = {}

    def run():
        try:
            out["value"] = write()
        except BaseException as exc:  # re-raised below
            out["error"] = exc
        finally:
            embedder.started.set()
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert embedder.started.wait(timeout=60)
        yield out
    finally:
        embedder.release.set()
        thread.join()
    if "error" in out:
        raise out["error"]


def nowait(sql, params):
    """Run ``sql`` (a ``FOR UPDATE NOWAIT`` or a try-lock) on the test's connection."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_a_store_embeds_before_it_takes_the_gate_lock():
    agent = AgentFactory()
    embedder = BlockingEmbedder()
    request = MemoryStoreRequest(content="The release train leaves Tuesdays.", category="semantic")
    key = f"memory-gate:{agent.pk}:default:semantic"
    with blocked(
        lambda: memory_store(agent=agent, request=request, embedder=embedder), embedder
    ) as out:
        (row,) = nowait("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))", [key])
        assert row == (True,)
        # Another writer of the same agent and group stores meanwhile, without waiting.
        other = memory_store(
            agent=agent,
            request=MemoryStoreRequest(content="Lunch is at noon on Fridays.", category="semantic"),
            embedder=ConstantEmbedder(),
        )
    result = out["value"]
    assert result.stored and result.embedding_status == "ready"
    assert {m.pk for m in Memory.objects.filter(agent=agent)} == {other.id, result.id}


def test_an_archive_restore_embeds_before_it_locks_the_archive_row():
    agent = AgentFactory()
    gone = MemoryFactory(agent=agent, content="An old fact about the archive.")
    archived = archived_from_memory(gone, mode=ArchivalMode.EXTRACTIVE, archived_at=timezone.now())
    archived.save()
    gone.delete()
    embedder = BlockingEmbedder()
    restore = lambda: archive_restore(agent=agent, archive_id=archived.pk, embedder=embedder)  # noqa: E731
    with blocked(restore, embedder) as out:
        rows = nowait(
            "SELECT id FROM memory_archivedmemory WHERE id = %s FOR UPDATE NOWAIT", [archived.pk]
        )
        assert len(rows) == 1
    result = out["value"]
    assert ArchivedMemory.objects.get(pk=archived.pk).restored_memory_id == result.memory_id
    assert Memory.objects.get(pk=result.memory_id).embedding_status == "ready"


def test_consolidation_embeds_the_summary_before_it_locks_the_group():
    agent = AgentFactory()
    configure(
        agent.company,
        strategy="simple",
        group_threshold=3,
        archival={"enabled": True, "age_threshold_days": 30},
    )
    now = timezone.now()
    seed(agent, 5, now=now, age_days=40, category="episodic")
    embedder = BlockingEmbedder()
    with blocked(lambda: run_maintenance(agent=agent, now=now, embedder=embedder), embedder) as out:
        rows = nowait(
            "SELECT id FROM memory_memory WHERE agent_id = %s FOR UPDATE NOWAIT", [agent.pk]
        )
        assert len(rows) == 5
    report = out["value"]
    assert report.status == "succeeded", report.errors
    assert report.counts["consolidated"] == 4


def test_an_update_embeds_before_it_locks_and_never_keeps_a_vector_of_another_text():
    """The row is free while the update embeds; a concurrent change of the same memory's
    text wins the race, so the vector computed for the old text must not be stored."""
    agent = AgentFactory()
    memory = MemoryFactory(agent=agent, content="Deploys run on Friday.", context="")
    embedder = BlockingEmbedder()
    update = lambda: memory_update(  # noqa: E731
        agent=agent,
        memory_id=memory.pk,
        request=MemoryUpdateRequest(content="Deploys run on Monday."),
        embedder=embedder,
    )
    with blocked(update, embedder):
        assert nowait("SELECT id FROM memory_memory WHERE id = %s FOR UPDATE NOWAIT", [memory.pk])
        memory_update(
            agent=agent,
            memory_id=memory.pk,
            request=MemoryUpdateRequest(context="From the ops handbook."),
            embedder=ConstantEmbedder(),
        )
    row = Memory.objects.get(pk=memory.pk)
    assert (row.content, row.context) == ("Deploys run on Monday.", "From the ops handbook.")
    assert (row.embedding_status, row.embedder_id, row.embedding) == ("pending", "", None)
