"""The operation log is append-only in Postgres itself, and its rows are self-consistent."""

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.facts import fact_publish
from synthorg.db.append_only import APPEND_ONLY_SQLSTATE


@pytest.fixture
def entry(company, human):
    return fact_publish(company=company, actor=human, content="Ship on Fridays", category="adr")


def _raw(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE orgmemory_operationlogentry SET content = 'Never ship' WHERE operation_id = %s",
        "UPDATE orgmemory_operationlogentry SET version = 9 WHERE operation_id = %s",
        "DELETE FROM orgmemory_operationlogentry WHERE operation_id = %s",
    ],
)
def test_raw_update_and_delete_on_the_log_raise(entry, sql):
    with pytest.raises(DatabaseError) as caught:
        _raw(sql, [entry.operation_id])
    assert caught.value.__cause__.sqlstate == APPEND_ONLY_SQLSTATE
    assert "append-only" in str(caught.value)
    row = OperationLogEntry.objects.get(pk=entry.pk)
    assert (row.content, row.version) == ("Ship on Fridays", 1)


@pytest.mark.django_db
def test_truncate_on_the_log_raises(entry):
    with pytest.raises(DatabaseError):
        _raw("TRUNCATE orgmemory_operationlogentry CASCADE")
    assert OperationLogEntry.objects.count() == 1


@pytest.mark.django_db
def test_orm_update_and_delete_raise_too(entry):
    with pytest.raises(DatabaseError), transaction.atomic():
        OperationLogEntry.objects.filter(pk=entry.pk).update(content="x")
    with pytest.raises(DatabaseError), transaction.atomic():
        OperationLogEntry.objects.filter(pk=entry.pk).delete()


@pytest.mark.django_db
def test_search_fields_are_filled_on_insert(entry):
    row = OperationLogEntry.objects.get(pk=entry.pk)
    assert row.doc_length == 2  # "ship", "friday"
    assert "friday" in str(row.search_vector)


@pytest.mark.django_db
def test_duplicate_version_is_rejected_by_the_database(entry, human):
    fact = OrgFact.objects.get(pk=entry.fact_id)
    with pytest.raises(IntegrityError), transaction.atomic():
        OperationLogEntry.objects.create(
            company=fact.company,
            fact=fact,
            version=1,
            operation_type="PUBLISH",
            content="dup",
            category="adr",
            author_is_human=True,
            author_user=human.user,
            timestamp=entry.timestamp,
        )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("operation", "content"),
    [("PUBLISH", None), ("PUBLISH", "   "), ("RETRACT", "text")],
)
def test_content_must_match_the_operation(entry, human, operation, content):
    fact = OrgFact.objects.get(pk=entry.fact_id)
    with (
        pytest.raises(IntegrityError, match="orglog_content_matches_operation"),
        transaction.atomic(),
    ):
        OperationLogEntry.objects.create(
            company=fact.company,
            fact=fact,
            version=2,
            operation_type=operation,
            content=content,
            category="adr",
            author_is_human=True,
            author_user=human.user,
            timestamp=entry.timestamp,
        )
