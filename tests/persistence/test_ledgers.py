"""AuditEntry and CostRecord are append-only at the database: raw SQL cannot rewrite them."""

import pytest
from django.db import connection, transaction
from django.db.utils import ProgrammingError

from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry, CostRecord
from persistence.services.audit import audit_record
from persistence.services.costs import cost_record_create
from tests.persistence.factories import AgentFactory

LEDGERS = [
    ("persistence_costrecord", "cost = 0", CostRecord),
    ("persistence_auditentry", "action_type = 'forged'", AuditEntry),
]


@pytest.fixture
def rows(company):
    agent = AgentFactory(company=company)
    cost = cost_record_create(
        company=company,
        agent=agent,
        provider="openai",
        model="gpt-4o",
        input_tokens=10,
        output_tokens=5,
        cost="0.25",
    )
    entry = audit_record(company=company, actor_agent=agent, action_type=AuditAction.API_KEY_ISSUED)
    return {CostRecord: cost, AuditEntry: entry}


def _raw(sql, params):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
@pytest.mark.parametrize(("table", "assignment", "model"), LEDGERS)
def test_raw_update_is_rejected(rows, table, assignment, model):
    row = rows[model]
    with pytest.raises(ProgrammingError, match="append-only: UPDATE is not allowed"):
        _raw(f"UPDATE {table} SET {assignment} WHERE id = %s", [row.pk])
    fresh = model.objects.get(pk=row.pk)
    if model is CostRecord:
        assert str(fresh.cost) == "0.2500000000"
    else:
        assert fresh.action_type == "api_key.issued"


@pytest.mark.django_db
@pytest.mark.parametrize(("table", "assignment", "model"), LEDGERS)
def test_raw_delete_is_rejected(rows, table, assignment, model):
    row = rows[model]
    with pytest.raises(ProgrammingError, match="append-only: DELETE is not allowed"):
        _raw(f"DELETE FROM {table} WHERE id = %s", [row.pk])
    assert model.objects.filter(pk=row.pk).exists()


@pytest.mark.django_db
def test_orm_update_and_delete_are_rejected_too(rows):
    record = rows[CostRecord]
    with pytest.raises(ProgrammingError), transaction.atomic():
        CostRecord.objects.filter(pk=record.pk).update(cost=1)
    with pytest.raises(ProgrammingError), transaction.atomic():
        record.delete()
    assert CostRecord.objects.filter(pk=record.pk).count() == 1


@pytest.mark.django_db
def test_a_correction_is_a_new_negative_record(company, rows):
    original = rows[CostRecord]
    cost_record_create(
        company=company,
        agent=original.agent,
        provider="openai",
        model="gpt-4o",
        input_tokens=0,
        output_tokens=0,
        cost="-0.25",
    )
    from persistence.selectors.costs import cost_total

    assert cost_total(company) == 0
    assert CostRecord.objects.filter(company=company).count() == 2
