"""Append-only records of decisions and delivery attempts (issue 22, finding 8).

The approval item, the write-access request and the webhook delivery are mutable queue rows
holding the latest state; every decision and attempt is also an append-only record, written
in the same transaction, that the database refuses to UPDATE, DELETE or TRUNCATE.
"""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from orgmemory.models import (
    ApprovalDecision,
    ApprovalItem,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WriteAccessRequest,
    WriteRequestDecision,
)
from orgmemory.services.approvals import (
    approval_decide,
    approval_expire_overdue,
    approval_request,
    register_approval_applier,
)
from orgmemory.services.webhooks import (
    FAILED_CONNECT,
    FAILED_DISABLED,
    MAX_ATTEMPTS,
    webhook_configure,
    webhook_deliver,
)
from orgmemory.services.write_requests import write_request_decide, write_request_file
from persistence.principal import Principal
from synthorg.db.append_only import APPEND_ONLY_SQLSTATE
from synthorg.errors import ConflictError, InvalidInputError
from tests.orgmemory.test_webhooks import SECRET, Receiver
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _item(company, **overrides):
    fields = {
        "action_type": "deploy:production",
        "title": "Deploy billing v2",
        "risk_level": "high",
        "source": "api",
        "requested_by": "release-bot",
    }
    fields.update(overrides)
    return approval_request(company=company, **fields)


def _operator(company):
    membership = MembershipFactory(company=company, role="operator", user__password=None)
    return Principal.for_human(membership.user, company, "operator")


def _request(company, caller):
    return write_request_file(
        company=company,
        actor=Principal.for_agent(caller.agent),
        content="All services expose /healthz.",
        category="convention",
        justification="Every outage review asked for it.",
    )


def _fields(record, names):
    return {name: getattr(record, name) for name in names}


DECISION_FIELDS = ("company_id", "item_id", "decision", "actor_user_id", "reason", "created_at")


# --- approval decisions ----------------------------------------------------------------------


def test_an_approval_writes_one_decision_record(company):
    operator = _operator(company)
    item = _item(company)
    now = timezone.now()
    approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve", now=now)
    record = ApprovalDecision.objects.get()
    assert _fields(record, DECISION_FIELDS) == {
        "company_id": company.pk,
        "item_id": item.pk,
        "decision": "approve",
        "actor_user_id": operator.user.pk,
        "reason": "",
        "created_at": now,
    }


def test_a_rejection_records_its_reason(company):
    operator = _operator(company)
    item = _item(company)
    now = timezone.now()
    approval_decide(
        company=company,
        actor=operator,
        item_id=item.pk,
        decision="reject",
        reason="  not during the freeze ",
        now=now,
    )
    record = ApprovalDecision.objects.get()
    assert _fields(record, DECISION_FIELDS) == {
        "company_id": company.pk,
        "item_id": item.pk,
        "decision": "reject",
        "actor_user_id": operator.user.pk,
        "reason": "not during the freeze",
        "created_at": now,
    }


def test_an_expiry_records_a_system_decision(company):
    item = _item(company)
    later = item.expires_at + timedelta(seconds=1)
    assert approval_expire_overdue(now=later) == 1
    record = ApprovalDecision.objects.get()
    assert _fields(record, DECISION_FIELDS) == {
        "company_id": company.pk,
        "item_id": item.pk,
        "decision": "expire",
        "actor_user_id": None,
        "reason": "",
        "created_at": later,
    }


def test_a_refused_decision_records_nothing(company):
    operator = _operator(company)
    item = _item(company)
    approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    with pytest.raises(ConflictError):
        approval_decide(
            company=company,
            actor=_operator(company),
            item_id=item.pk,
            decision="reject",
            reason="x",
        )
    assert list(ApprovalDecision.objects.values_list("decision", flat=True)) == ["approve"]


def test_a_failing_applier_rolls_the_decision_record_back(company):
    def refuse(item, actor):
        raise InvalidInputError("cannot apply", code="cannot_apply")

    register_approval_applier("test:refuses", refuse)
    item = _item(company, action_type="test:refuses")
    with pytest.raises(InvalidInputError):
        approval_decide(
            company=company, actor=_operator(company), item_id=item.pk, decision="approve"
        )
    assert ApprovalDecision.objects.count() == 0
    assert ApprovalItem.objects.get(pk=item.pk).status == "pending"


# --- write-access request decisions ----------------------------------------------------------

REQUEST_FIELDS = (
    "company_id",
    "request_id",
    "decision",
    "actor_user_id",
    "reason",
    "published_operation_id",
    "created_at",
)


def test_approving_a_write_request_records_the_published_version(company, junior, human):
    request = _request(company, junior)
    decided = write_request_decide(
        company=company, actor=human, request_id=request.pk, decision="approve"
    )
    record = WriteRequestDecision.objects.get()
    assert _fields(record, REQUEST_FIELDS) == {
        "company_id": company.pk,
        "request_id": request.pk,
        "decision": "approve",
        "actor_user_id": human.user.pk,
        "reason": "",
        "published_operation_id": decided.published_operation_id,
        "created_at": decided.decided_at,
    }
    assert decided.published_operation_id is not None


def test_rejecting_a_write_request_records_the_reason(company, junior, human):
    request = _request(company, junior)
    decided = write_request_decide(
        company=company, actor=human, request_id=request.pk, decision="reject", reason="dup"
    )
    record = WriteRequestDecision.objects.get()
    assert _fields(record, REQUEST_FIELDS) == {
        "company_id": company.pk,
        "request_id": request.pk,
        "decision": "reject",
        "actor_user_id": human.user.pk,
        "reason": "dup",
        "published_operation_id": None,
        "created_at": decided.decided_at,
    }
    with pytest.raises(ConflictError):
        write_request_decide(
            company=company, actor=human, request_id=request.pk, decision="approve"
        )
    assert WriteRequestDecision.objects.count() == 1


# --- webhook delivery attempts ---------------------------------------------------------------

ATTEMPT_FIELDS = ("company_id", "delivery_id", "attempt", "status_code", "failure")


def test_each_delivery_attempt_is_recorded_with_status_or_failure_kind(company, receiver):
    receiver.status = 503
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    first_at = delivery.last_attempt_at
    receiver.status = 204
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    attempts = list(WebhookDeliveryAttempt.objects.order_by("attempt"))
    assert [_fields(a, ATTEMPT_FIELDS) for a in attempts] == [
        {
            "company_id": company.pk,
            "delivery_id": delivery.pk,
            "attempt": 1,
            "status_code": 503,
            "failure": "http_status",
        },
        {
            "company_id": company.pk,
            "delivery_id": delivery.pk,
            "attempt": 2,
            "status_code": 204,
            "failure": "",
        },
    ]
    assert [a.created_at for a in attempts] == [first_at, delivery.last_attempt_at]
    assert all(a.duration_ms >= 0 for a in attempts)
    # the record has no field that could hold an answer's body or an error's text
    names = {f.name for f in WebhookDeliveryAttempt._meta.get_fields()}
    assert names == {
        "id",
        "company",
        "delivery",
        "attempt",
        "status_code",
        "failure",
        "duration_ms",
        "created_at",
    }


def test_connection_failures_and_a_disabled_webhook_record_their_kind(company):
    webhook = webhook_configure(
        company=company, url="http://127.0.0.1:9/hook", secret=SECRET, principal=None
    )
    delivery = _item(company).webhook_deliveries.get()
    webhook_deliver(delivery_id=delivery.pk)
    assert WebhookDelivery.objects.get(pk=delivery.pk).reason == FAILED_CONNECT
    webhook.enabled = False
    webhook.save()
    webhook_deliver(delivery_id=delivery.pk)
    assert WebhookDelivery.objects.get(pk=delivery.pk).reason == FAILED_DISABLED
    assert list(
        WebhookDeliveryAttempt.objects.order_by("attempt").values_list(
            "attempt", "status_code", "failure"
        )
    ) == [(1, None, "connect"), (2, None, "webhook_disabled")]


def test_a_delivery_given_up_has_one_record_per_attempt(company, receiver):
    receiver.status = 500
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    delivery = _item(company).webhook_deliveries.get()
    for _ in range(MAX_ATTEMPTS + 1):
        webhook_deliver(delivery_id=delivery.pk)
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == "failed"
    assert list(
        WebhookDeliveryAttempt.objects.order_by("attempt").values_list("attempt", "status_code")
    ) == [(n, 500) for n in range(1, MAX_ATTEMPTS + 1)]


# --- enforced by the database ----------------------------------------------------------------


@pytest.fixture
def records(company, junior, human, receiver):
    webhook_configure(company=company, url=receiver.url, secret=SECRET, principal=None)
    item = _item(company)
    approval_decide(company=company, actor=_operator(company), item_id=item.pk, decision="approve")
    webhook_deliver(delivery_id=item.webhook_deliveries.earliest("created_at").pk)
    request = _request(company, junior)
    write_request_decide(company=company, actor=human, request_id=request.pk, decision="approve")
    return {
        ApprovalDecision: ApprovalDecision.objects.get().pk,
        WebhookDeliveryAttempt: WebhookDeliveryAttempt.objects.get().pk,
        WriteRequestDecision: WriteRequestDecision.objects.get().pk,
    }


RECORD_MODELS = [ApprovalDecision, WebhookDeliveryAttempt, WriteRequestDecision]


def _raw(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.parametrize("model", RECORD_MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize(
    "statement",
    ["UPDATE {table} SET created_at = now() WHERE id = %s", "DELETE FROM {table} WHERE id = %s"],
)
def test_raw_update_and_delete_of_a_record_raise(records, model, statement):
    table = model._meta.db_table
    before = model.objects.filter(pk=records[model]).values().get()
    with pytest.raises(DatabaseError) as caught:
        _raw(statement.format(table=table), [records[model]])
    assert caught.value.__cause__.sqlstate == APPEND_ONLY_SQLSTATE
    assert f"table {table} is append-only" in str(caught.value)
    assert model.objects.filter(pk=records[model]).values().get() == before


@pytest.mark.parametrize("model", RECORD_MODELS, ids=lambda m: m.__name__)
def test_truncate_and_orm_delete_of_a_record_raise(records, model):
    with pytest.raises(DatabaseError):
        _raw(f"TRUNCATE {model._meta.db_table} CASCADE")
    with pytest.raises(DatabaseError), transaction.atomic():
        model.objects.filter(pk=records[model]).delete()
    assert model.objects.filter(pk=records[model]).exists()


def test_the_queue_rows_stay_mutable(records):
    # the latest-state rows are not records: they still change (and hold no history)
    assert ApprovalItem.objects.update(consumed_at=None) == 1
    assert WriteAccessRequest.objects.update(justification="edited") == 1
    assert WebhookDelivery.objects.update(claimed_until=None) >= 1
