"""The app connects as a role that owns nothing: append-only tables hold against it too."""

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.utils import InternalError, ProgrammingError
from django.utils import timezone

from persistence.audit_actions import AuditAction
from persistence.models import (
    AuditEntry,
    CollaborationMetric,
    LifecycleEvent,
    Task,
    TaskMetric,
)
from persistence.services.audit import audit_record
from tests.persistence.factories import AgentFactory, TaskFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not settings.DATABASE_OWNER,
        reason="one database role configured (DATABASE_URL without DATABASE_OWNER_URL)",
    ),
]

APPEND_ONLY = [
    "persistence_auditentry",
    "persistence_costrecord",
    "orgmemory_operationlogentry",
    "persistence_lifecycleevent",
    "persistence_taskmetric",
    "persistence_collaborationmetric",
    "orgmemory_approvaldecision",
    "orgmemory_writerequestdecision",
    "orgmemory_webhookdeliveryattempt",
    "procedural_capturestatuschange",
    "evolver_draftstatuschange",
    "evolver_evolvercyclestatuschange",
    "ingestion_scheduleddreamstatuschange",
    "procedural_executionreport",
]


def fetch(sql, params=None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def refused(sql, params=None):
    """Run ``sql`` in a savepoint; return the database's error message (it must fail)."""
    with pytest.raises((ProgrammingError, InternalError)) as caught, transaction.atomic():
        fetch(sql, params)
    return str(caught.value)


def test_tests_and_app_run_as_a_non_superuser_that_owns_no_table():
    rows = fetch(
        "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls "
        "FROM pg_roles WHERE rolname = current_user"
    )
    assert rows == [(settings.DATABASES["default"]["USER"], False, False, False, False)]
    assert current_user() != settings.DATABASE_OWNER["USER"]
    assert fetch("SELECT count(*) FROM pg_tables WHERE tableowner = current_user") == [(0,)]
    owners = fetch("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'")
    assert owners == [(settings.DATABASE_OWNER["USER"],)]


def current_user():
    return fetch("SELECT current_user")[0][0]


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_the_app_role_cannot_disable_or_drop_the_append_only_triggers(table):
    assert "must be owner of table" in refused(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
    assert "must be owner of table" in refused(f"ALTER TABLE {table} DISABLE TRIGGER USER")
    assert "must be owner of" in refused(f"DROP TRIGGER {table}_append_only ON {table}")
    assert "permission denied" in refused(f"TRUNCATE {table}")
    # The triggers are still there and enabled.
    assert fetch(
        "SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = %s::regclass "
        "AND tgname LIKE %s ORDER BY 1",
        [table, f"{table}_%"],
    ) == [(f"{table}_append_only", "O"), (f"{table}_no_truncate", "O")]


def test_the_app_role_cannot_switch_triggers_off_for_its_session():
    message = refused("SET session_replication_role = replica")
    assert 'permission denied to set parameter "session_replication_role"' in message
    assert fetch("SHOW session_replication_role") == [("origin",)]


def test_update_delete_and_truncate_of_an_append_only_row_fail_and_change_nothing(company):
    entry = audit_record(company=company, action_type=AuditAction.MEMORY_STORED, details={"n": 1})
    assert "append-only: UPDATE is not allowed" in refused(
        "UPDATE persistence_auditentry SET action_type = 'forged' WHERE id = %s", [entry.pk]
    )
    assert "append-only: DELETE is not allowed" in refused(
        "DELETE FROM persistence_auditentry WHERE id = %s", [entry.pk]
    )
    assert "permission denied for table persistence_auditentry" in refused(
        "TRUNCATE persistence_auditentry CASCADE"
    )
    assert list(AuditEntry.objects.filter(pk=entry.pk).values_list("action_type", "details")) == [
        ("memory.stored", {"n": 1})
    ]


def test_activity_ledgers_are_append_only(company):
    agent, peer = AgentFactory(company=company), AgentFactory(company=company)
    task = TaskFactory(company=company)
    now = timezone.now()
    event = LifecycleEvent.objects.create(
        company=company, agent=agent, event_type="hired", created_at=now
    )
    metric = TaskMetric.objects.create(
        company=company, task=task, agent=agent, success=True, created_at=now
    )
    collab = CollaborationMetric.objects.create(
        company=company,
        agent=agent,
        peer=peer,
        task=task,
        interaction_type="review",
        score=0.5,
        created_at=now,
    )
    for table, pk in [
        ("persistence_lifecycleevent", event.pk),
        ("persistence_taskmetric", metric.pk),
        ("persistence_collaborationmetric", collab.pk),
    ]:
        assert "is append-only: UPDATE" in refused(
            f"UPDATE {table} SET created_at = now() WHERE id = %s", [pk]
        )
        assert "is append-only: DELETE" in refused(f"DELETE FROM {table} WHERE id = %s", [pk])
    # Deleting what they point at is refused up front instead of cascading into them.
    from django.db.models import ProtectedError

    with pytest.raises(ProtectedError), transaction.atomic():
        agent.delete()
    with pytest.raises(ProtectedError), transaction.atomic():
        task.delete()
    assert LifecycleEvent.objects.filter(pk=event.pk).exists()
    assert TaskMetric.objects.get(pk=metric.pk).task_id == task.pk
    assert CollaborationMetric.objects.get(pk=collab.pk).task_id == task.pk


def test_deleting_a_task_with_metrics_is_a_409_and_changes_nothing(company, human_client):
    agent = AgentFactory(company=company)
    task = TaskFactory(company=company)
    TaskMetric.objects.create(
        company=company, task=task, agent=agent, success=True, created_at=timezone.now()
    )
    response = human_client.delete(f"/api/v1/tasks/{task.pk}")
    assert response.status_code == 409
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "task_has_metrics"
    assert Task.objects.filter(pk=task.pk).exists()
    assert TaskMetric.objects.filter(task=task).count() == 1
    assert not AuditEntry.objects.filter(action_type="task.deleted").exists()
