"""Issue 22, finding 1: the default lifecycle destroys nothing.

Whatever consolidation, retention, expiry or the per-agent cap removes from the hot store is
archived and restorable by its original id; a shared entry removed is retracted with an audit
record; the live core memory is never capped; only an explicit ``action: delete`` rule deletes
for good, audited.
"""

import uuid
from datetime import timedelta

import pytest

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.services.maintenance import run_maintenance
from persistence.models import AuditEntry
from persistence.selectors.config import company_config
from persistence.services.companies import company_config_set
from synthorg.company_config.memory import ConsolidationConfig
from synthorg.errors import InvalidInputError
from tests.memory.core.maintenance.conftest import configure, seed
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def restore_url(some_id):
    return f"/api/v1/archive/{some_id}/restore"


def test_default_config_archives_consolidated_originals_restorable_by_original_id(caller, now):
    # The company has no config at all: the product defaults apply.
    assert company_config(caller.company).memory.consolidation == ConsolidationConfig()
    rows = seed(caller.agent, 5, now=now, age_days=100, template="Deploy note number %(i)d.")
    core = seed(caller.agent, 3, now=now, age_days=100, category="semantic", tags=["core"])

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    # the core memory is never consolidated away
    assert Memory.objects.filter(pk__in=[m.pk for m in core]).count() == 3
    live = Memory.objects.filter(agent=caller.agent).exclude(tags__contains=["core"])
    summary = live.get(source="consolidation")
    kept = live.exclude(pk=summary.pk).get()
    removed = [m for m in rows if m.pk != kept.pk]
    assert len(removed) == 4
    assert (report.counts["consolidated"], report.counts["archived"]) == (4, 4)
    assert report.counts["deleted"] == 0
    archived = ArchivedMemory.objects.filter(agent=caller.agent)
    assert {(a.original_id, a.content, a.created_at) for a in archived} == {
        (m.pk, m.content, m.created_at) for m in removed
    }

    # Each original comes back through the restore endpoint, named by its original id.
    for memory in removed:
        response = caller.client.post(restore_url(memory.pk))
        assert response.status_code == 200, response.json()
        restored = Memory.objects.get(pk=response.json()["memory_id"])
        assert (restored.content, restored.category, restored.created_at) == (
            memory.content,
            memory.category,
            memory.created_at,
        )
        assert response.json()["archive_id"] == str(archived.get(original_id=memory.pk).pk)
    assert not archived.filter(restored_at__isnull=True).exists()
    # a second restore by original id is refused, as by archive id
    again = caller.client.post(restore_url(removed[0].pk))
    assert (again.status_code, again.json()["code"]) == (409, "archive_already_restored")


def test_restore_by_original_id_is_scoped_to_the_agent(caller, peer, outsider, now):
    seed(caller.agent, 4, now=now, age_days=100)
    run_maintenance(agent=caller.agent, now=now)
    original = ArchivedMemory.objects.filter(agent=caller.agent).first().original_id
    for other in (peer, outsider):
        response = other.client.post(restore_url(original))
        assert (response.status_code, response.json()["code"]) == (404, "archive_not_found")
    assert ArchivedMemory.objects.get(original_id=original).restored_at is None


def test_cap_archives_the_oldest_retracts_shared_and_keeps_core(caller, peer, now):
    configure(caller.company, max_memories_per_agent=4)
    core = seed(caller.agent, 1, now=now, age_days=200, category="semantic", tags=["core"])[0]
    old_core = seed(caller.agent, 1, now=now, age_days=210, category="semantic", tags=["core"])[0]
    Memory.objects.filter(pk=old_core.pk).update(superseded_at=now - timedelta(days=200))
    shared = seed(caller.agent, 1, now=now, age_days=150, is_shared=True)[0]
    private = seed(caller.agent, 5, now=now, age_days=1, category="working")

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    # 8 memories, cap 4: the four oldest that are not the live core go (the superseded core
    # block, the shared entry, the two oldest private ones)
    capped = {old_core.pk, shared.pk, private[4].pk, private[3].pk}
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True)) == {
        core.pk,
        private[0].pk,
        private[1].pk,
        private[2].pk,
    }
    assert (report.counts["enforced_archived"], report.counts["shared_retracted"]) == (4, 1)
    assert (report.counts["archived"], report.counts["deleted"]) == (4, 0)
    assert dict(
        ArchivedMemory.objects.filter(agent=caller.agent).values_list("original_id", "mode")
    ) == dict.fromkeys(capped, "capped")
    run = MaintenanceRun.objects.get(pk=report.run_id)
    assert (run.enforced_archived, run.shared_retracted, run.archived, run.deleted) == (4, 1, 4, 0)

    # the shared entry's removal is the retraction shared_retract records
    (retract,) = AuditEntry.objects.filter(action_type="memory.shared_retracted")
    assert (retract.target_type, retract.target_id) == ("memory", str(shared.pk))
    assert retract.details == {
        "namespace": "default",
        "category": "episodic",
        "reason": "over max_memories_per_agent (4)",
        "via": "maintenance",
        "archive_id": str(ArchivedMemory.objects.get(original_id=shared.pk).pk),
        "mode": "capped",
    }

    # restored by its original id, the shared entry is company knowledge again
    response = caller.client.post(restore_url(shared.pk))
    assert response.status_code == 200, response.json()
    back = Memory.objects.get(pk=response.json()["memory_id"])
    assert back.is_shared and back.content == shared.content
    restored = AuditEntry.objects.get(action_type="memory.archive_restored")
    assert restored.details["shared"] is True


def test_explicit_delete_rule_deletes_live_and_archived_for_good_audited(caller, now):
    configure(
        caller.company,
        retention={"rules": [{"category": "working", "retention_days": 7, "action": "delete"}]},
    )
    old = seed(caller.agent, 3, now=now, age_days=10, category="working")
    fresh = seed(caller.agent, 2, now=now, age_days=1, category="working")
    other = seed(caller.agent, 1, now=now, age_days=10, category="episodic")
    # archived earlier (e.g. by the cap): past the same days, so the rule reaches it too
    earlier = MemoryFactory(
        agent=caller.agent, category="working", created_at=now - timedelta(days=20)
    )
    ArchivedMemory.objects.create(
        company=caller.company,
        agent=caller.agent,
        original_id=earlier.pk,
        namespace="default",
        category="working",
        content=earlier.content,
        created_at=earlier.created_at,
        archived_at=now - timedelta(days=5),
        mode="capped",
    )
    archived_young = ArchivedMemory.objects.create(
        company=caller.company,
        agent=caller.agent,
        original_id=uuid.uuid4(),
        namespace="default",
        category="working",
        content="young archived note",
        created_at=now - timedelta(days=2),
        archived_at=now - timedelta(days=1),
        mode="capped",
    )
    archive_id = ArchivedMemory.objects.get(original_id=earlier.pk).pk
    earlier.delete()

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    counts = report.counts
    assert (counts["retention_deleted"], counts["archive_deleted"], counts["deleted"]) == (3, 1, 4)
    assert counts["archived"] == 0
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True)) == {
        *(m.pk for m in fresh),
        other[0].pk,
    }
    assert list(ArchivedMemory.objects.filter(agent=caller.agent)) == [archived_young]
    (entry,) = AuditEntry.objects.filter(action_type="memory.retention_deleted")
    assert (entry.target_type, entry.target_id, entry.risk_level) == (
        "agent",
        str(caller.agent.pk),
        "medium",
    )
    assert entry.details == {
        "category": "working",
        "retention_days": 7,
        "rule": "company_category",
        "run_id": report.run_id,
        "memory_ids": [str(m.pk) for m in sorted(old, key=lambda m: (m.created_at, m.pk))],
        "shared_memory_ids": [],
        "archive_ids": [str(archive_id)],
    }
    run = MaintenanceRun.objects.get(pk=report.run_id)
    assert (run.retention_deleted, run.archive_deleted, run.deleted, run.archived) == (3, 1, 4, 0)
    assert run.details["retention"]["working"] == {
        "days": 7,
        "action": "delete",
        "source": "company_category",
    }


def test_a_default_retention_archives_unless_told_to_delete(caller, now):
    configure(caller.company, retention={"default_retention_days": 30})
    rows = seed(caller.agent, 2, now=now, age_days=40, category="social")
    report = run_maintenance(agent=caller.agent, now=now)
    assert (report.counts["retention_archived"], report.counts["deleted"]) == (2, 0)
    assert set(
        ArchivedMemory.objects.filter(mode="retention").values_list("original_id", flat=True)
    ) == {m.pk for m in rows}

    configure(caller.company, retention={"default_retention_days": 30, "default_action": "delete"})
    seed(caller.agent, 2, now=now, age_days=40, category="social")
    report = run_maintenance(agent=caller.agent, now=now)
    # the explicit default deletes the live ones and the two archived above
    assert (report.counts["retention_deleted"], report.counts["archive_deleted"]) == (2, 2)
    assert not ArchivedMemory.objects.exists()


def test_expired_memories_are_archived(caller, now):
    (memory,) = seed(caller.agent, 1, now=now, age_days=2, expires_at=now - timedelta(hours=1))
    report = run_maintenance(agent=caller.agent, now=now)
    assert (report.counts["expired_archived"], report.counts["deleted"]) == (1, 0)
    assert ArchivedMemory.objects.get(original_id=memory.pk).mode == "expired"


def test_delete_needs_days_and_unknown_actions_are_refused(company):
    data = {"memory": {"consolidation": {"retention": {"default_action": "delete"}}}}
    with pytest.raises(InvalidInputError, match="default_action: 'delete' needs"):
        company_config_set(company=company, data=data)
    rule = {"category": "working", "retention_days": 7, "action": "purge"}
    data = {"memory": {"consolidation": {"retention": {"rules": [rule]}}}}
    with pytest.raises(InvalidInputError, match="action"):
        company_config_set(company=company, data=data)
    company.refresh_from_db()
    assert company.config == {}


def superseded_core_version(agent, now):
    """A core entry written 120 days ago and replaced 100 days ago."""
    [version] = seed(
        agent,
        1,
        now=now,
        age_days=120,
        category="semantic",
        tags=["core"],
        superseded_at=now - timedelta(days=100),
    )
    return version


@pytest.mark.parametrize("action", ["archive", "delete"])
def test_retention_rules_never_touch_the_core_memory_unless_they_name_it(caller, now, action):
    """An operator's rule on the core memory's category (and the defaults) ages out the
    other memories only, not the core memory's current or superseded versions; a rule that
    names ``core`` takes the core entries unchanged for its days (issue 34 item 7)."""
    configure(
        caller.company,
        retention={
            "default_retention_days": 7,
            "default_action": action,
            "rules": [{"category": "semantic", "retention_days": 7, "action": action}],
        },
    )
    [core] = seed(caller.agent, 1, now=now, age_days=100, category="semantic", tags=["core"])
    old_core = superseded_core_version(caller.agent, now)
    [edited_core] = seed(caller.agent, 1, now=now, age_days=100, category="semantic", tags=["core"])
    Memory.objects.filter(pk=edited_core.pk).update(updated_at=now - timedelta(days=1))
    others = seed(caller.agent, 2, now=now, age_days=100, category="semantic")
    episodic = seed(caller.agent, 1, now=now, age_days=100)  # under the default

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    cores = {core.pk, old_core.pk, edited_core.pk}
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True)) == cores
    gone = {*(m.pk for m in others), episodic[0].pk}
    archived = set(ArchivedMemory.objects.values_list("original_id", flat=True))
    assert archived == (gone if action == "archive" else set())
    assert report.retention.decisions["core"] == {"days": None, "action": None, "source": "forever"}

    # the operator names the core memory: its entries unchanged for 30 days go, by the rule
    configure(
        caller.company,
        retention={"rules": [{"category": "core", "retention_days": 30, "action": action}]},
    )
    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "succeeded", report.errors
    left = set(Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True))
    assert left == {edited_core.pk}
    counts = (
        report.retention.deleted_by_category
        if action == "delete"
        else (report.retention.archived_by_category)
    )
    assert counts == {"core": 2}
    archived = set(ArchivedMemory.objects.values_list("original_id", flat=True))
    assert archived == (gone | {core.pk, old_core.pk} if action == "archive" else set())


def test_a_delete_rule_on_the_semantic_category_keeps_the_archived_core_versions(caller, now):
    core = superseded_core_version(caller.agent, now)
    [note] = seed(caller.agent, 1, now=now, age_days=100, category="semantic")
    configure(caller.company, max_memories_per_agent=1, archival={"enabled": False})
    MemoryFactory(agent=caller.agent, company=caller.company, category="semantic", tags=["core"])
    # the cap archives the oldest but the current core memory: the superseded version, note
    run_maintenance(agent=caller.agent, now=now)
    assert set(ArchivedMemory.objects.values_list("original_id", flat=True)) == {
        core.pk,
        note.pk,
    }
    rule = {"category": "semantic", "retention_days": 7, "action": "delete"}
    configure(caller.company, archival={"enabled": False}, retention={"rules": [rule]})

    run_maintenance(agent=caller.agent, now=now)

    assert set(ArchivedMemory.objects.values_list("original_id", flat=True)) == {core.pk}
