"""A maintenance run over a seeded agent: retention → consolidation → archival → limit."""

from datetime import timedelta

import pytest

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.services.maintenance import (
    ARCHIVAL_OFF,
    run_company_maintenance,
    run_maintenance,
)
from persistence.models import AuditEntry
from tests.memory.core.maintenance.conftest import configure, seed
from tests.persistence.factories import AgentFactory
from tests.support.db_roles import owner_cursor

pytestmark = pytest.mark.django_db

SCENARIO = {
    "strategy": "simple",
    "group_threshold": 3,
    "max_memories_per_agent": 8,
    "retention": {"rules": [{"category": "working", "retention_days": 7}]},
    "archival": {"enabled": True, "age_threshold_days": 30},
}


def seed_scenario(agent, now):
    """18 memories; see the expected counts in the test."""
    rows = {
        "working_old": seed(agent, 4, now=now, age_days=10, category="working"),
        "working_new": seed(agent, 2, now=now, age_days=1, category="working"),
        "expired": seed(
            agent, 1, now=now, age_days=2, category="semantic", expires_at=now - timedelta(hours=1)
        ),
        "episodic_old": seed(agent, 5, now=now, age_days=40, category="episodic"),
        "semantic_old": seed(agent, 2, now=now, age_days=50, category="semantic"),
        "shared_old": seed(agent, 1, now=now, age_days=60, category="episodic", is_shared=True),
        "procedural": seed(agent, 3, now=now, age_days=5, category="procedural"),
    }
    # The most relevant old episodic memory is kept as it is.
    Memory.objects.filter(pk=rows["episodic_old"][2].pk).update(confidence=1.0)
    Memory.objects.filter(pk__in=[m.pk for m in rows["episodic_old"]]).exclude(
        pk=rows["episodic_old"][2].pk
    ).update(confidence=0.6)
    return rows


def test_maintenance_run_counts_match_exactly(caller, peer, now):
    agent = caller.agent
    configure(agent.company, **SCENARIO)
    rows = seed_scenario(agent, now)
    peer_rows = seed_scenario(peer.agent, now)
    assert Memory.objects.filter(agent=agent).count() == 18

    report = run_maintenance(agent=agent, now=now)

    assert report.status == "succeeded", report.errors
    assert report.counts == {
        "retention_archived": 4,  # working older than 7 days
        "retention_deleted": 0,
        "archive_deleted": 0,
        "expired_archived": 1,
        "consolidated": 4,  # 5 old episodic: the best is kept, 4 fold into a summary
        "summaries_created": 1,
        "enforced_archived": 2,  # 18 - 5 - 4 + 1 = 10 > 8: the two oldest go
        "shared_retracted": 1,  # one of them is the shared entry
        "archived": 11,  # everything removed from the hot store is in the archive
        "deleted": 0,
    }
    assert (report.memories_before, report.memories_after) == (18, 8)

    remaining = set(Memory.objects.filter(agent=agent).values_list("pk", flat=True))
    kept = rows["episodic_old"][2].pk
    summary = Memory.objects.get(agent=agent, source="consolidation")
    # the oldest two after consolidation: the 60-day shared one and the older 50-day semantic
    enforced = {rows["shared_old"][0].pk, rows["semantic_old"][1].pk}
    assert remaining == {
        *(m.pk for m in rows["working_new"]),
        *(m.pk for m in rows["procedural"]),
        rows["semantic_old"][0].pk,
        kept,
        summary.pk,
    }
    assert not enforced & remaining

    # the summary is a real, embedded memory in the group's category and namespace
    removed = [m for m in rows["episodic_old"] if m.pk != kept]
    assert summary.category == "episodic" and summary.namespace == "default"
    assert summary.embedding_status == "ready" and summary.embedding is not None
    assert summary.tags == ["consolidated", "strategy:simple"]
    assert summary.content.splitlines()[0] == "Consolidated 4 memories:"
    assert all(m.content in summary.content for m in removed)

    # every removed memory is archived, by why it left
    modes = dict(ArchivedMemory.objects.filter(agent=agent).values_list("original_id", "mode"))
    assert modes == {
        **{m.pk: "retention" for m in rows["working_old"]},
        rows["expired"][0].pk: "expired",
        **{m.pk: "extractive" for m in removed},
        **{pk: "capped" for pk in enforced},
    }
    # the shared entry left the company's shared knowledge with a retraction on record
    retract = AuditEntry.objects.get(action_type="memory.shared_retracted")
    assert (retract.target_id, retract.details["via"], retract.details["mode"]) == (
        str(rows["shared_old"][0].pk),
        "maintenance",
        "capped",
    )
    assert retract.details["reason"] == "over max_memories_per_agent (8)"

    # consolidation's archive rows hold the removed memories whole, indexed by original id
    archived = {
        a.original_id: a
        for a in ArchivedMemory.objects.filter(agent=agent, summary_memory_id__isnull=False)
    }
    assert set(archived) == {m.pk for m in removed}
    for memory in removed:
        entry = archived[memory.pk]
        assert (entry.content, entry.category, entry.created_at, entry.mode) == (
            memory.content,
            "episodic",
            memory.created_at,
            "extractive",
        )
        assert entry.summary_memory_id == summary.pk
    index = {e.original_id: e.archival_id for e in report.consolidation.result.archival_index}
    assert index == {original: a.pk for original, a in archived.items()}

    # the run is recorded with the same counts
    run = MaintenanceRun.objects.get(pk=report.run_id)
    assert (run.status, run.trigger, run.strategy, run.agent_id) == (
        "succeeded",
        "manual",
        "simple",
        agent.pk,
    )
    assert (
        run.retention_archived,
        run.retention_deleted,
        run.expired_archived,
        run.consolidated,
        run.summaries_created,
        run.enforced_archived,
        run.shared_retracted,
        run.archived,
        run.deleted,
        run.scanned,
    ) == (4, 0, 1, 4, 1, 2, 1, 11, 0, 7)  # scanned: 5 episodic + 2 semantic older than 30 days
    assert run.finished_at >= run.started_at and run.errors == []
    assert run.details["retention_archived_by_category"] == {"working": 4}
    assert run.details["retention"]["working"] == {
        "days": 7,
        "action": "archive",
        "source": "company_category",
    }
    assert ArchivedMemory.objects.filter(agent=agent, maintenance_run=run).count() == 11
    assert len(run.details["archival_index"]) == 4
    audit = AuditEntry.objects.get(action_type="memory.maintenance_run")
    assert audit.details["run_id"] == run.pk and audit.details["consolidated"] == 4

    # the peer of the same company is untouched
    assert Memory.objects.filter(agent=peer.agent).count() == 18
    assert {m.pk for group in peer_rows.values() for m in group} == set(
        Memory.objects.filter(agent=peer.agent).values_list("pk", flat=True)
    )


def test_second_run_is_idempotent(caller, now):
    configure(caller.company, **SCENARIO)
    seed_scenario(caller.agent, now)
    run_maintenance(agent=caller.agent, now=now)
    again = run_maintenance(agent=caller.agent, now=now)
    assert again.status == "succeeded"
    assert again.processed == 0
    assert Memory.objects.filter(agent=caller.agent).count() == 8


def test_kill_switch_pauses_the_whole_cycle(caller, now):
    configure(caller.company, **{**SCENARIO, "enabled": False})
    seed_scenario(caller.agent, now)
    before = set(Memory.objects.filter(agent=caller.agent).values_list("pk", "content"))

    report = run_maintenance(agent=caller.agent, now=now)

    assert report.status == "skipped"
    assert report.processed == 0
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", "content")) == before
    assert not ArchivedMemory.objects.exists()
    run = MaintenanceRun.objects.get(pk=report.run_id)
    assert (run.status, run.consolidated, run.archived, run.deleted) == ("skipped", 0, 0, 0)
    # a company-wide (scheduled) run of a paused company does nothing and records nothing
    assert run_company_maintenance(company=caller.company, now=now) == []
    assert MaintenanceRun.objects.count() == 1


def test_archival_disabled_leaves_old_memories_live_and_whole(caller, now):
    configure(
        caller.company,
        strategy="simple",
        archival={"enabled": False},
    )
    rows = seed(caller.agent, 4, now=now, age_days=120)  # past the default 90 days
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "succeeded"
    assert report.counts["consolidated"] == 0 and report.counts["archived"] == 0
    assert report.consolidation.skipped_reason == ARCHIVAL_OFF
    assert not ArchivedMemory.objects.exists()
    assert set(Memory.objects.filter(agent=caller.agent).values_list("pk", "content")) == {
        (m.pk, m.content) for m in rows
    }


def test_retention_chain_uses_agent_overrides(now):
    agent = AgentFactory(
        retention_overrides={
            "rules": [{"category": "episodic", "retention_days": 3}],
            "default_retention_days": 20,
        }
    )
    configure(
        agent.company,
        retention={
            "rules": [{"category": "semantic", "retention_days": 10}],
            "default_retention_days": 100,
        },
    )
    seed(agent, 2, now=now, age_days=5, category="episodic")  # agent rule 3 → archived
    seed(agent, 2, now=now, age_days=15, category="semantic")  # company rule 10 → archived
    seed(agent, 2, now=now, age_days=8, category="semantic")  # company rule 10 → kept
    seed(agent, 2, now=now, age_days=25, category="social")  # agent default 20 → archived
    seed(agent, 2, now=now, age_days=15, category="social")  # agent default 20 → kept
    report = run_maintenance(agent=agent, now=now)
    assert report.retention.archived_by_category == {"episodic": 2, "semantic": 2, "social": 2}
    assert report.retention.deleted_by_category == {}
    days = {category: d["days"] for category, d in report.retention.decisions.items()}
    assert days == {
        "working": 20,
        "episodic": 3,
        "semantic": 10,
        "procedural": 20,
        "social": 20,
        "core": None,  # no default reaches the core memory, only a rule naming it
    }
    decisions = report.retention.decisions.values()
    assert {d["action"] for d in decisions if d["days"]} == {"archive"}
    assert Memory.objects.filter(agent=agent).count() == 4
    assert ArchivedMemory.objects.filter(agent=agent, mode="retention").count() == 6


def test_retention_works_off_a_backlog_in_bounded_batches(caller, now):
    configure(caller.company, retention={"default_retention_days": 1})
    seed(caller.agent, 5, now=now, age_days=3, category="working")
    first = run_maintenance(agent=caller.agent, now=now, batch_size=3)
    assert first.counts["retention_archived"] == 3
    second = run_maintenance(agent=caller.agent, now=now, batch_size=3)
    assert second.counts["retention_archived"] == 2
    assert not Memory.objects.filter(agent=caller.agent).exists()
    assert ArchivedMemory.objects.filter(agent=caller.agent).count() == 5


def test_invalid_agent_overrides_are_reported_and_ignored(now):
    agent = AgentFactory(retention_overrides={"default_retention_days": -5})
    configure(agent.company, retention={"default_retention_days": 30})
    seed(agent, 1, now=now, age_days=40, category="working")
    report = run_maintenance(agent=agent, now=now)
    assert report.status == "partial"
    assert report.errors[0].startswith("the agent's retention_overrides are invalid")
    assert report.counts["retention_archived"] == 1  # the company default still applies


def test_dry_run_changes_nothing(caller, now):
    configure(caller.company, **SCENARIO)
    seed_scenario(caller.agent, now)
    report = run_maintenance(agent=caller.agent, now=now, dry_run=True)
    assert report.dry_run and report.run_id is None
    assert report.counts["consolidated"] == 4 and report.counts["enforced_archived"] == 2
    assert Memory.objects.filter(agent=caller.agent).count() == 18
    assert not ArchivedMemory.objects.exists() and not MaintenanceRun.objects.exists()


def test_non_persistent_agent_is_not_consolidated(now):
    agent = AgentFactory(memory_level="session")
    configure(agent.company, strategy="simple", archival={"age_threshold_days": 30})
    seed(agent, 4, now=now, age_days=40)
    report = run_maintenance(agent=agent, now=now)
    assert report.counts["consolidated"] == 0
    assert report.status == "succeeded"
    run = MaintenanceRun.objects.get(pk=report.run_id)
    assert "memory level is 'session'" in run.details["consolidation_skipped"]
    assert Memory.objects.filter(agent=agent).count() == 4


def test_a_concurrent_run_of_the_same_agent_is_skipped(caller, peer, now):
    import psycopg
    from django.db import connection

    from memory.core.services.maintenance import _LOCK_CLASS, ALREADY_RUNNING

    configure(caller.company, retention={"default_retention_days": 5})
    seed(caller.agent, 2, now=now, age_days=10)
    seed(peer.agent, 2, now=now, age_days=10)
    params = {
        k: v
        for k, v in connection.get_connection_params().items()
        if k in {"dbname", "user", "password", "host", "port"}
    }
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_CLASS, caller.agent.pk])
        blocked = run_maintenance(agent=caller.agent, now=now)
        free = run_maintenance(agent=peer.agent, now=now)
        # released here: closing the connection ends its backend (and the lock) only later
        other.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, caller.agent.pk])
    assert (blocked.status, blocked.errors, blocked.processed) == ("skipped", [ALREADY_RUNNING], 0)
    assert Memory.objects.filter(agent=caller.agent).count() == 2
    assert (free.status, free.processed) == ("succeeded", 2)
    # the lock is released after a run: the next one proceeds
    assert run_maintenance(agent=caller.agent, now=now).processed == 2


@pytest.mark.django_db(transaction=True)
def test_a_failing_category_does_not_stop_the_others(caller, now):
    configure(caller.company, retention={"default_retention_days": 5})
    seed(caller.agent, 2, now=now, age_days=10, category="episodic")
    seed(caller.agent, 3, now=now, age_days=10, category="working")
    # A real database failure for one category: deleting episodic rows raises. The app role
    # cannot create triggers, so the owner installs (and afterwards removes) it.
    with owner_cursor() as cursor:
        cursor.execute(
            """
            CREATE FUNCTION test_block_episodic() RETURNS trigger AS $$
            BEGIN
                IF OLD.category = 'episodic' THEN
                    RAISE EXCEPTION 'episodic deletes blocked';
                END IF;
                RETURN OLD;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER block_episodic BEFORE DELETE ON memory_memory
                FOR EACH ROW EXECUTE FUNCTION test_block_episodic();
            """
        )
    try:
        _assert_partial_maintenance(caller, now)
    finally:
        with owner_cursor() as cursor:
            cursor.execute(
                "DROP TRIGGER block_episodic ON memory_memory; DROP FUNCTION test_block_episodic()"
            )


def _assert_partial_maintenance(caller, now):
    report = run_maintenance(agent=caller.agent, now=now)
    assert report.status == "partial"
    assert report.retention.archived_by_category == {"working": 3}
    assert len(report.errors) == 1
    assert report.errors[0].startswith("retention of episodic failed: episodic deletes blocked")
    assert list(Memory.objects.filter(agent=caller.agent).values_list("category", flat=True)) == [
        "episodic",
        "episodic",
    ]
    assert MaintenanceRun.objects.get(pk=report.run_id).errors == report.errors
    # the failed category's archive rows went with its savepoint: nothing half-moved
    assert set(
        ArchivedMemory.objects.filter(agent=caller.agent).values_list("category", flat=True)
    ) == {"working"}
