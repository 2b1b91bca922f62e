"""Denied writes filed as requests; humans approve (publishing) or reject (with a reason)."""

import pytest

from orgmemory.models import OperationLogEntry, OrgFact, WriteAccessRequest
from orgmemory.services.facts import fact_publish
from orgmemory.services.write_requests import (
    ACTION_APPROVED,
    ACTION_FILED,
    ACTION_REJECTED,
    ALREADY_DECIDED,
    REASON_REQUIRED,
    write_request_decide,
    write_request_file,
)
from orgmemory.write_access import OrgMemoryAccessDeniedError
from persistence.models import AuditEntry
from persistence.principal import Principal
from synthorg.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnprocessableError,
)

pytestmark = pytest.mark.django_db


def _file(company, caller, **overrides):
    fields = {
        "content": "All services expose /healthz.",
        "category": "convention",
        "tags": ["ops"],
        "justification": "Every outage review asked for it.",
    }
    fields.update(overrides)
    return write_request_file(company=company, actor=Principal.for_agent(caller.agent), **fields)


def test_denied_agent_files_a_pending_request(company, junior):
    request = _file(company, junior)
    assert request.status == "pending"
    assert (request.requester_id, request.requester_seniority) == (junior.agent.pk, "junior")
    assert request.justification == "Every outage review asked for it."
    assert OperationLogEntry.objects.count() == 0
    assert AuditEntry.objects.filter(action_type=ACTION_FILED, target_id=str(request.pk)).exists()


def test_approval_publishes_with_requester_and_approver(company, junior, human):
    request = _file(company, junior)
    decided = write_request_decide(
        company=company, actor=human, request_id=request.pk, decision="approve"
    )
    assert decided.status == "approved"
    assert decided.decided_by_id == human.user.pk
    entry = decided.published_operation
    assert (entry.version, entry.content, entry.category, entry.tags) == (
        1,
        "All services expose /healthz.",
        "convention",
        ["ops"],
    )
    assert (entry.author_is_human, entry.author_agent_id, entry.author_seniority) == (
        False,
        junior.agent.pk,
        "junior",
    )
    assert entry.approved_by_id == human.user.pk
    assert entry.write_request_id == request.pk
    assert decided.fact_id == entry.fact_id
    assert OrgFact.objects.get(pk=entry.fact_id).content == "All services expose /healthz."
    approval = AuditEntry.objects.get(action_type=ACTION_APPROVED)
    assert approval.actor_user_id == human.user.pk
    published = AuditEntry.objects.get(action_type="org_fact.published")
    assert published.actor_user_id == human.user.pk
    assert published.details["approved_by"] == human.user.pk


def test_approval_of_a_revision_adds_a_version(company, junior, human):
    first = fact_publish(company=company, actor=human, content="v1", category="adr")
    request = _file(company, junior, category="adr", content="v2", fact_id=first.fact_id)
    write_request_decide(company=company, actor=human, request_id=request.pk, decision="approve")
    assert OrgFact.objects.get(pk=first.fact_id).version == 2
    assert OrgFact.objects.get(pk=first.fact_id).content == "v2"


def test_rejection_needs_a_reason(company, junior, human):
    request = _file(company, junior)
    for reason in ("", "   "):
        with pytest.raises(InvalidInputError, match=REASON_REQUIRED):
            write_request_decide(
                company=company,
                actor=human,
                request_id=request.pk,
                decision="reject",
                reason=reason,
            )
    request.refresh_from_db()
    assert request.status == "pending"
    decided = write_request_decide(
        company=company,
        actor=human,
        request_id=request.pk,
        decision="reject",
        reason="Covered by the ops handbook.",
    )
    assert (decided.status, decided.decision_reason, decided.decided_by_id) == (
        "rejected",
        "Covered by the ops handbook.",
        human.user.pk,
    )
    assert OperationLogEntry.objects.count() == 0
    assert AuditEntry.objects.get(action_type=ACTION_REJECTED).details["reason"] == (
        "Covered by the ops handbook."
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [("approve", "approve"), ("approve", "reject"), ("reject", "approve"), ("reject", "reject")],
)
def test_deciding_twice_is_409(company, junior, human, first, second):
    request = _file(company, junior)
    write_request_decide(
        company=company, actor=human, request_id=request.pk, decision=first, reason="no"
    )
    with pytest.raises(ConflictError) as caught:
        write_request_decide(
            company=company, actor=human, request_id=request.pk, decision=second, reason="again"
        )
    status = "approved" if first == "approve" else "rejected"
    assert caught.value.code == "write_request_already_decided"
    assert caught.value.detail == ALREADY_DECIDED.format(status=status)
    assert OperationLogEntry.objects.count() == (1 if first == "approve" else 0)


def test_only_humans_decide_and_only_agents_file(company, junior, senior, human):
    request = _file(company, junior)
    with pytest.raises(AccessDeniedError):
        write_request_decide(
            company=company,
            actor=Principal.for_agent(senior.agent),
            request_id=request.pk,
            decision="approve",
        )
    with pytest.raises(AccessDeniedError):
        write_request_file(
            company=company, actor=human, content="x", category="adr", justification="y"
        )


def test_request_is_refused_when_unneeded_or_unapprovable(company, junior, senior):
    with pytest.raises(UnprocessableError):
        _file(company, senior)  # senior may write conventions directly
    with pytest.raises(OrgMemoryAccessDeniedError) as caught:
        _file(company, junior, category="entity_definition")  # no rule: no human can approve
    assert caught.value.code == "write_request_not_permitted"
    assert caught.value.extra["can_request"] is False
    with pytest.raises(InvalidInputError):
        _file(company, junior, justification="  ")
    assert WriteAccessRequest.objects.count() == 0


def test_requests_are_isolated_between_companies(company, junior, outsider):
    from tests.persistence.factories import MembershipFactory

    request = _file(company, junior)
    membership = MembershipFactory(company=outsider.company, role="admin", user__password=None)
    stranger = Principal.for_human(membership.user, outsider.company, "admin")
    with pytest.raises(NotFoundError):
        write_request_decide(
            company=outsider.company, actor=stranger, request_id=request.pk, decision="approve"
        )
    request.refresh_from_db()
    assert request.status == "pending"


def test_an_agent_cannot_file_a_core_policy_request(company, junior):
    with pytest.raises(OrgMemoryAccessDeniedError) as caught:
        _file(company, junior, category="core_policy", content="Deploy only on Mondays.")
    assert (caught.value.status, caught.value.code) == (403, "core_policy_human_only")
    assert caught.value.extra == {"category": "core_policy", "can_request": False}
    assert WriteAccessRequest.objects.count() == 0
    assert not AuditEntry.objects.filter(action_type=ACTION_FILED).exists()


def test_a_pending_core_policy_request_filed_earlier_cannot_be_approved(company, junior, human):
    from django.utils import timezone

    request = WriteAccessRequest.objects.create(  # as filed before the rule existed
        company=company,
        requester=junior.agent,
        requester_seniority="junior",
        category="core_policy",
        content="Deploy only on Mondays.",
        justification="Fewer incidents.",
        created_at=timezone.now(),
    )
    with pytest.raises(OrgMemoryAccessDeniedError) as caught:
        write_request_decide(
            company=company, actor=human, request_id=request.pk, decision="approve"
        )
    assert caught.value.code == "core_policy_human_only"
    request.refresh_from_db()
    assert (request.status, request.published_operation_id) == ("pending", None)
    assert OperationLogEntry.objects.count() == 0
    assert OrgFact.objects.count() == 0
    assert not AuditEntry.objects.filter(action_type=ACTION_APPROVED).exists()


def test_the_log_refuses_an_agent_authored_core_policy(company, junior):
    import uuid

    from django.db import IntegrityError, transaction
    from django.utils import timezone

    now = timezone.now()
    fact = OrgFact.objects.create(
        fact_id=uuid.uuid4(),
        company=company,
        category="core_policy",
        content="Deploy only on Mondays.",
        version=1,
        created_at=now,
        updated_at=now,
    )
    with pytest.raises(IntegrityError, match="orglog_core_policy_human"), transaction.atomic():
        OperationLogEntry.objects.create(
            company=company,
            fact=fact,
            version=1,
            operation_type="PUBLISH",
            content=fact.content,
            category="core_policy",
            author_is_human=False,
            author_agent=junior.agent,
            author_seniority="junior",
            timestamp=now,
        )
