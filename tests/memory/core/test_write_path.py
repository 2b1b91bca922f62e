"""The write path's contract: one transaction per store batch, and every store and update
audited with the principal — ids and field names, never the content."""

import json
import uuid

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.core.consolidation.models import ArchivalMode
from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest
from memory.core.errors import MemoryNotFoundError
from memory.core.models.memory import Memory
from memory.core.services.archive import archive_restore, archived_from_memory
from memory.core.services.edit import memory_correct, memory_update
from memory.core.services.shared import shared_publish
from memory.core.services.store import memory_store, memory_store_batch
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory, MembershipFactory

pytestmark = pytest.mark.django_db


class RecordingEmbedder:
    embedder_id = "test:recording"
    dims = 384

    def __init__(self):
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

    def embed_one(self, text):
        return self.embed([text])[0]


def req(content, **kw):
    return MemoryStoreRequest(content=content, category=kw.pop("category", "semantic"), **kw)


def as_agent(agent):
    return Principal(company=agent.company, agent=agent)


def audit(action_type):
    return list(AuditEntry.objects.filter(action_type=action_type).order_by("id"))


# --- one transaction ------------------------------------------------------------------------


def test_a_batch_is_one_transaction():
    """The gate's first pass, the embedder, the locks, the rows and the audit entry: one
    transaction (inside the test's transaction, one savepoint)."""
    agent = AgentFactory()
    memory_store(agent=agent, request=req("Ana leads the billing team."))
    with CaptureQueriesContext(connection) as queries:
        results = memory_store_batch(
            agent=agent,
            requests=[req("ana leads the billing team"), req("Kafka keeps data for a week.")],
            principal=as_agent(agent),
            embedder=RecordingEmbedder(),
        )
    assert [r.deduplicated for r in results] == [True, False]
    statements = [q["sql"] for q in queries.captured_queries]
    savepoints = [i for i, sql in enumerate(statements) if sql.startswith("SAVEPOINT")]
    released = [i for i, sql in enumerate(statements) if sql.startswith("RELEASE SAVEPOINT")]
    assert len(savepoints) == 1 and len(released) == 1
    inside = statements[savepoints[0] + 1 : released[0]]
    assert sum("pg_advisory_xact_lock" in sql for sql in inside) == 1
    assert sum('INSERT INTO "persistence_auditentry"' in sql for sql in inside) == 1


def test_a_rejected_item_leaves_nothing_written():
    agent = AgentFactory()
    with pytest.raises(MemoryNotFoundError):
        memory_store_batch(
            agent=agent,
            requests=[req("Fine."), req("Also fine.", supersedes=(uuid.uuid4(),))],
            principal=as_agent(agent),
        )
    assert not Memory.objects.exists()
    assert not AuditEntry.objects.exists()


# --- audit ----------------------------------------------------------------------------------


def test_store_is_audited_with_the_principal():
    agent = AgentFactory()
    result = memory_store(
        agent=agent, request=req("The deploy runs every Friday."), principal=as_agent(agent)
    )
    (entry,) = audit("memory.stored")
    assert (entry.company_id, entry.actor_agent_id, entry.actor_user_id) == (
        agent.company_id,
        agent.pk,
        None,
    )
    assert (entry.target_type, entry.target_id) == ("agent", str(agent.pk))
    assert entry.details == {
        "agent_id": agent.pk,
        "memory_ids": [str(result.id)],
        "deduplicated": 0,
        "superseded_ids": [],
        "level": "persistent",
        "is_shared": False,
    }


def test_a_batch_is_one_audit_entry_with_ids_and_no_content():
    agent = AgentFactory()
    old = memory_store(agent=agent, request=req("The password rotates monthly."))
    results = memory_store_batch(
        agent=agent,
        requests=[
            req("Alpha team owns the billing service."),
            req("alpha team owns the billing service"),
            req("The password rotates weekly now.", supersedes=(old.id,)),
        ],
        principal=as_agent(agent),
    )
    entries = audit("memory.stored")
    assert len(entries) == 2  # one per batch
    details = entries[-1].details
    assert details["memory_ids"] == [str(results[0].id), str(results[2].id)]
    assert (details["deduplicated"], details["superseded_ids"]) == (1, [str(old.id)])
    assert "billing" not in json.dumps(details) and "password" not in json.dumps(details)


def test_a_batch_of_duplicates_only_writes_nothing_and_records_nothing():
    agent = AgentFactory()
    memory_store(agent=agent, request=req("Ana leads the billing team."))
    again = memory_store(agent=agent, request=req("ana leads the billing team"))
    assert again.deduplicated
    assert len(audit("memory.stored")) == 1


def test_update_is_audited_with_the_principal_and_field_names_only():
    agent = AgentFactory()
    memory = MemoryFactory(agent=agent, content="Original text.")
    memory_update(
        agent=agent,
        memory_id=memory.pk,
        request=MemoryUpdateRequest(content="A secret new text.", tags=("x",)),
        principal=as_agent(agent),
        embedder=RecordingEmbedder(),
    )
    (entry,) = audit("memory.updated")
    assert (entry.actor_agent_id, entry.target_type, entry.target_id) == (
        agent.pk,
        "memory",
        str(memory.pk),
    )
    assert entry.details == {
        "agent_id": agent.pk,
        "fields": ["content", "tags"],
        "reembedded": True,
        "category": "semantic",
    }


def test_a_correction_is_audited_once_as_a_correction():
    agent = AgentFactory()
    membership = MembershipFactory(company=agent.company, role="operator")
    human = Principal(company=agent.company, user=membership.user, role="operator")
    memory = MemoryFactory(agent=agent, content="Wrong text.")
    memory_correct(
        agent=agent,
        memory_id=memory.pk,
        content="Right text.",
        reason="typo",
        principal=human,
        embedder=RecordingEmbedder(),
    )
    assert [e.action_type for e in AuditEntry.objects.all()] == ["memory.corrected"]
    memory.refresh_from_db()
    assert (memory.content, memory.embedding_status) == ("Right text.", "ready")


def test_publication_and_restore_keep_their_own_single_entry():
    agent = AgentFactory()
    shared_publish(agent=agent, request=req("Staging resets nightly."), principal=as_agent(agent))
    assert [e.action_type for e in AuditEntry.objects.all()] == ["memory.shared_published"]

    gone = MemoryFactory(agent=agent, content="An old fact about the archive.")
    archived = archived_from_memory(gone, mode=ArchivalMode.EXTRACTIVE, archived_at=timezone.now())
    archived.save()
    gone.delete()
    embedder = RecordingEmbedder()
    archive_restore(agent=agent, archive_id=archived.pk, embedder=embedder)
    assert [e.action_type for e in AuditEntry.objects.order_by("id")] == [
        "memory.shared_published",
        "memory.archive_restored",
    ]
    assert embedder.calls == [["An old fact about the archive."]]
    restored = Memory.objects.get(content="An old fact about the archive.")
    assert restored.embedding_status == "ready"
