"""The approval queue: constraints, request/decide/consume/expire, audit, webhook rows."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from orgmemory.inbox import InboxFilters, inbox_page, status_counts
from orgmemory.models import ApprovalItem, WebhookDelivery, WriteAccessRequest
from orgmemory.services.approvals import (
    ACTION_APPROVED,
    ACTION_CONSUMED,
    ACTION_EXPIRED,
    ACTION_REJECTED,
    ACTION_REQUESTED,
    DECIDERS_ONLY,
    REASON_REQUIRED,
    approval_consume,
    approval_decide,
    approval_expire_overdue,
    approval_request,
    register_approval_applier,
)
from orgmemory.services.webhooks import webhook_configure
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.errors import AccessDeniedError, ConflictError, InvalidInputError, NotFoundError
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _item(company, **overrides):
    fields = {
        "action_type": "deploy:production",
        "title": "Deploy billing v2",
        "description": "Roll out the new invoice renderer.",
        "risk_level": "high",
        "source": "api",
        "requested_by": "release-bot",
    }
    fields.update(overrides)
    return approval_request(company=company, **fields)


def _principal(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    return Principal.for_human(membership.user, company, role)


@pytest.fixture
def operator(company):
    return _principal(company, "operator")


# --- database constraints --------------------------------------------------------------------


def _raw_update(item, sql_set: str, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE orgmemory_approvalitem SET {sql_set} WHERE id = %s", [*params, item.pk]
        )


@pytest.mark.parametrize(
    ("sql_set", "constraint"),
    [
        ("title = '  '", "approval_title_not_blank"),
        ("action_type = ''", "approval_action_type_not_blank"),
        ("source = ''", "approval_source_not_blank"),
        ("requested_by = ''", "approval_requester_not_blank"),
        ("risk_level = 'severe'", "approval_risk_level_valid"),
        ("status = 'maybe'", "approval_(status_valid|decided_fields)"),
        ("expires_at = created_at + interval '59 seconds'", "approval_ttl_range"),
        ("expires_at = created_at + interval '7 days 1 second'", "approval_ttl_range"),
        # decided without a decider / decision time
        ("status = 'approved'", "approval_decided_fields"),
        # pending with decision fields
        ("decided_at = created_at", "approval_decided_fields"),
        # a reason on a pending item
        ("decision_reason = 'because'", "approval_reason_iff_rejected"),
        # consumed while pending
        ("consumed_at = created_at", "approval_consumed_only_approved"),
    ],
)
def test_database_rejects_invalid_items(company, sql_set, constraint):
    item = _item(company)
    with pytest.raises(IntegrityError, match=constraint):
        _raw_update(item, sql_set)
    item.refresh_from_db()
    assert (item.status, item.title, item.risk_level) == ("pending", "Deploy billing v2", "high")


def test_database_requires_reason_iff_rejected_and_consumption_only_after_approval(
    company, operator
):
    item = _item(company)
    user_id = operator.user.pk
    with pytest.raises(IntegrityError, match="approval_reason_iff_rejected"):
        _raw_update(
            item,
            "status = 'rejected', decided_at = created_at, decided_by_id = %s",
            [user_id],
        )
    with pytest.raises(IntegrityError, match="approval_reason_iff_rejected"):
        _raw_update(
            item,
            "status = 'approved', decided_at = created_at, decided_by_id = %s, "
            "decision_reason = 'fine'",
            [user_id],
        )
    with pytest.raises(IntegrityError, match="approval_consumed_only_approved"):
        _raw_update(
            item,
            "status = 'approved', decided_at = created_at + interval '1 minute', "
            "decided_by_id = %s, consumed_at = created_at",
            [user_id],
        )
    with pytest.raises(IntegrityError, match="approval_decided_fields"):
        _raw_update(
            item, "status = 'expired', decided_at = created_at, decided_by_id = %s", [user_id]
        )
    # the valid shapes pass
    _raw_update(
        item,
        "status = 'rejected', decided_at = created_at, decided_by_id = %s, decision_reason = 'no'",
        [user_id],
    )
    item.refresh_from_db()
    assert (item.status, item.decision_reason) == ("rejected", "no")


# --- request ---------------------------------------------------------------------------------


def test_request_creates_pending_item_with_default_ttl_and_audit(company, caller):
    item = approval_request(
        company=company,
        action_type="deploy:production",
        title="  Deploy  ",
        risk_level="medium",
        source="api",
        requester_agent=caller.agent,
        evidence={"diff": "+1 -1"},
    )
    assert (item.status, item.title, item.requested_by) == ("pending", "Deploy", caller.agent.name)
    assert item.expires_at - item.created_at == timedelta(days=1)
    entry = AuditEntry.objects.get(action_type=ACTION_REQUESTED, target_id=str(item.pk))
    assert (entry.actor_agent_id, entry.risk_level) == (caller.agent.pk, "medium")
    evolver = _item(company, action_type="skill_evolver:org_promotion", risk_level="medium")
    assert evolver.expires_at - evolver.created_at == timedelta(days=7)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"title": " "}, "title"),
        ({"action_type": ""}, "action_type"),
        ({"risk_level": "severe"}, "risk_level"),
        ({"ttl": timedelta(seconds=59)}, "ttl_seconds"),
        ({"ttl": timedelta(days=7, seconds=1)}, "ttl_seconds"),
    ],
)
def test_request_rejects_bad_input_and_writes_nothing(company, overrides, field):
    with pytest.raises(InvalidInputError) as exc:
        _item(company, **overrides)
    assert exc.value.errors[0]["field"] == field
    assert ApprovalItem.objects.count() == 0
    assert not AuditEntry.objects.filter(action_type=ACTION_REQUESTED).exists()


# --- decide ----------------------------------------------------------------------------------


def test_approve_records_decider_and_audits_in_same_transaction(company, operator):
    item = _item(company)
    decided = approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    item.refresh_from_db()
    assert (item.status, item.decided_by_id, item.decision_reason) == (
        "approved",
        operator.user.pk,
        "",
    )
    assert item.decided_at is not None and decided.status == "approved"
    entry = AuditEntry.objects.get(action_type=ACTION_APPROVED, target_id=str(item.pk))
    assert (entry.actor_user_id, entry.risk_level, entry.details["decision"]) == (
        operator.user.pk,
        "high",
        "approve",
    )


def test_reject_requires_reason_and_records_it(company, operator):
    item = _item(company)
    with pytest.raises(InvalidInputError, match=REASON_REQUIRED) as exc:
        approval_decide(company=company, actor=operator, item_id=item.pk, decision="reject")
    assert exc.value.code == "rejection_reason_required"
    item.refresh_from_db()
    assert item.status == "pending"
    approval_decide(
        company=company, actor=operator, item_id=item.pk, decision="reject", reason=" too risky "
    )
    item.refresh_from_db()
    assert (item.status, item.decision_reason) == ("rejected", "too risky")
    assert (
        AuditEntry.objects.filter(action_type=ACTION_REJECTED, target_id=str(item.pk)).count() == 1
    )


def test_second_decision_is_409_and_changes_nothing(company, operator):
    item = _item(company)
    other = _principal(company, "owner")
    approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    with pytest.raises(ConflictError) as exc:
        approval_decide(
            company=company, actor=other, item_id=item.pk, decision="reject", reason="no"
        )
    assert exc.value.code == "approval_already_decided"
    assert exc.value.extra["item_status"] == "approved"
    assert exc.value.extra["decided_by"] == operator.user.username
    item.refresh_from_db()
    assert (item.status, item.decided_by_id, item.decision_reason) == (
        "approved",
        operator.user.pk,
        "",
    )
    assert (
        AuditEntry.objects.filter(
            target_id=str(item.pk), action_type__in=[ACTION_APPROVED, ACTION_REJECTED]
        ).count()
        == 1
    )


@pytest.mark.parametrize("role", ["viewer", None])
def test_viewers_and_agents_may_not_decide(company, caller, role):
    item = _item(company)
    actor = _principal(company, role) if role else Principal.for_agent(caller.agent)
    with pytest.raises(AccessDeniedError, match=DECIDERS_ONLY):
        approval_decide(company=company, actor=actor, item_id=item.pk, decision="approve")
    item.refresh_from_db()
    assert item.status == "pending"


def test_other_companys_item_is_not_found(company, operator):
    foreign = _item(CompanyFactory())
    with pytest.raises(NotFoundError):
        approval_decide(company=company, actor=operator, item_id=foreign.pk, decision="approve")
    foreign.refresh_from_db()
    assert foreign.status == "pending"


def test_expired_item_cannot_be_decided_and_sweep_marks_it(company, operator):
    now = timezone.now()
    item = _item(company, ttl=timedelta(seconds=60), now=now - timedelta(seconds=61))
    fresh = _item(company)
    with pytest.raises(ConflictError) as exc:
        approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    assert exc.value.code == "approval_expired"
    assert approval_expire_overdue(now=now) == 1
    item.refresh_from_db()
    fresh.refresh_from_db()
    assert (item.status, item.decided_at, item.decided_by_id) == ("expired", None, None)
    assert fresh.status == "pending"
    assert AuditEntry.objects.filter(action_type=ACTION_EXPIRED, target_id=str(item.pk)).exists()
    assert approval_expire_overdue(now=now) == 0


def test_expiry_is_a_registered_schedule():
    from synthorg.schedules import declared_schedules

    spec = declared_schedules()["orgmemory-approval-expiry"]
    assert (spec.func, spec.minutes) == ("orgmemory.tasks.expire_approval_items", 1)


# --- consume and appliers --------------------------------------------------------------------


def test_consume_only_once_and_only_when_approved(company, operator, caller):
    item = _item(company, requester_agent=caller.agent, requested_by="")
    agent = Principal.for_agent(caller.agent)
    with pytest.raises(ConflictError) as exc:
        approval_consume(company=company, item_id=item.pk, actor=agent)
    assert exc.value.code == "approval_not_approved"
    approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    consumed = approval_consume(company=company, item_id=item.pk, actor=agent)
    assert consumed.consumed_at >= consumed.decided_at
    with pytest.raises(ConflictError) as exc:
        approval_consume(company=company, item_id=item.pk, actor=agent)
    assert exc.value.code == "approval_already_consumed"
    assert (
        AuditEntry.objects.filter(action_type=ACTION_CONSUMED, target_id=str(item.pk)).count() == 1
    )


def test_applier_failure_rolls_the_decision_back(company, operator):
    calls = []

    def failing(item, actor):
        calls.append(item.pk)
        raise ConflictError("cannot apply", code="apply_failed")

    register_approval_applier("test:failing", failing)
    item = _item(company, action_type="test:failing")
    with pytest.raises(ConflictError, match="cannot apply"):
        approval_decide(company=company, actor=operator, item_id=item.pk, decision="approve")
    item.refresh_from_db()
    assert calls == [item.pk]
    assert (item.status, item.decided_by_id) == ("pending", None)
    assert not AuditEntry.objects.filter(action_type=ACTION_APPROVED).exists()


# --- inbox and webhooks ----------------------------------------------------------------------


def test_inbox_lists_items_and_write_requests_closest_to_expiry_first(company, operator, caller):
    from orgmemory.services.write_requests import write_request_file

    old = _item(company, title="old", now=timezone.now() - timedelta(hours=2))
    decided = _item(company, title="decided")
    approval_decide(company=company, actor=operator, item_id=decided.pk, decision="approve")
    junior = caller.agent
    junior.seniority = "junior"
    junior.save()
    request = write_request_file(
        company=company,
        actor=Principal.for_agent(junior),
        content="All services expose /healthz.",
        category="convention",
        justification="outage reviews",
    )
    _item(CompanyFactory(), title="foreign")
    inbox = inbox_page(company=company, filters=InboxFilters(status=None))
    assert [(d.kind, d.status) for d in inbox.decisions] == [
        ("approval", "pending"),
        ("approval", "approved"),
        ("write_request", "pending"),  # never expires: last
    ]
    assert inbox.decisions[0].id == str(old.pk)
    assert inbox.decisions[2].id == str(request.pk)
    assert {k: str(v) for k, v in status_counts(company=company).items()} == {
        "pending": "2",
        "approved": "1",
        "rejected": "0",
        "expired": "0",
    }
    only_requests = inbox_page(company=company, filters=InboxFilters(kind="write_request"))
    assert [d.id for d in only_requests.decisions] == [str(request.pk)]
    high = inbox_page(company=company, filters=InboxFilters(risk_level="high"))
    assert [d.id for d in high.decisions] == [str(old.pk)]
    assert WriteAccessRequest.objects.get(pk=request.pk).status == "pending"


def test_webhook_delivery_rows_follow_the_items_events(company, operator):
    assert _item(company).webhook_deliveries.count() == 0  # no webhook configured
    webhook_configure(
        company=company, url="http://127.0.0.1:9/hook", secret="s3cret", principal=None
    )
    item = _item(company)
    approval_decide(
        company=company, actor=operator, item_id=item.pk, decision="reject", reason="no"
    )
    events = list(
        WebhookDelivery.objects.filter(item=item)
        .order_by("created_at")
        .values_list("event", "status", "payload__item__status")
    )
    assert events == [
        ("approval.pending", "pending", "pending"),
        ("approval.rejected", "pending", "rejected"),
    ]
