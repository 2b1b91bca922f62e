"""Pending embeddings are filled in by the q2 backfill task once the embedder recovers."""

import pytest

from memory.core.models.memory import Memory
from memory.core.tasks import backfill_pending_embeddings
from synthorg.schedules import declared_schedules
from tests.memory.conftest import use_remote_embedder
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db


def test_backfill_after_the_embedder_recovers(caller, failing_embedder):
    response = caller.client.post(
        "/api/v1/memories",
        {"content": "Grafana lives on port 3000.", "category": "semantic"},
        format="json",
    )
    memory_id = response.json()["id"]
    assert backfill_pending_embeddings() == 0  # still failing: nothing filled, nothing lost
    assert Memory.objects.get(pk=memory_id).embedding_status == "pending"

    failing_embedder.set_handler(failing_embedder.EMBEDDINGS, failing_embedder._default_embeddings)
    assert backfill_pending_embeddings() == 1
    row = Memory.objects.get(pk=memory_id)
    assert (row.embedding_status, row.embedder_id) == ("ready", "openai:fake-embed")
    assert len(row.embedding) == 384
    assert backfill_pending_embeddings() == 0


def test_backfill_uses_each_companys_embedder(embedding_server):
    remote = CompanyFactory()
    use_remote_embedder(remote, embedding_server)
    local = CompanyFactory()
    a = MemoryFactory(agent=AgentFactory(company=remote))
    b = MemoryFactory(agent=AgentFactory(company=local), content="Local model memory.")
    ready = MemoryFactory(
        agent=AgentFactory(company=local),
        embedding=[0.5] * 384,
        embedder_id="x",
        embedding_status="ready",
    )
    assert backfill_pending_embeddings(limit=10) == 2
    a.refresh_from_db(), b.refresh_from_db(), ready.refresh_from_db()
    assert a.embedder_id == "openai:fake-embed"
    assert b.embedder_id not in ("", "openai:fake-embed")
    assert ready.embedder_id == "x"
    requests = embedding_server.requests_to(embedding_server.EMBEDDINGS)
    assert [r.json()["input"] for r in requests] == [[a.content]]


def test_backfill_schedule_is_declared():
    spec = declared_schedules()["memory-embedding-backfill"]
    assert spec.func == "memory.core.tasks.backfill_pending_embeddings"


def test_vectors_of_the_previous_default_model_are_re_embedded_by_the_backfill():
    """Migration 0008 hands the old model's vectors to the backfill, which re-embeds them."""
    import importlib

    from django.db import connection

    from synthorg.embedding import MINILM_EMBEDDER_ID

    migration = importlib.import_module(
        "memory.core.migrations.0008_reembed_previous_default_model"
    )
    agent = AgentFactory()
    old = MemoryFactory(
        agent=agent,
        embedding=[0.5] * 384,
        embedder_id="all-MiniLM-L6-v2-onnx-int8",
        embedding_status="ready",
    )
    other = MemoryFactory(
        agent=agent, embedding=[0.5] * 384, embedder_id="openai:x", embedding_status="ready"
    )
    (operation,) = migration.Migration.operations
    with connection.cursor() as cursor:
        for sql, params in operation.sql:
            cursor.execute(sql, params)
    old.refresh_from_db(), other.refresh_from_db()
    assert (old.embedding_status, other.embedding_status) == ("pending", "ready")
    assert backfill_pending_embeddings() == 1
    old.refresh_from_db()
    assert (old.embedding_status, old.embedder_id) == ("ready", MINILM_EMBEDDER_ID)
    assert list(old.embedding[:2]) != [0.5, 0.5]
