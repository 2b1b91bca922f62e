"""Write-access requests: an agent files a denied write; a human approves or rejects it.

Approval publishes the fact with the requesting agent as author and the approving human
recorded (``approved_by``) in the same transaction as the decision, its append-only
``WriteRequestDecision`` record and its audit entry. The request row is a mutable queue row
(its latest state); the decision records are its history.
Deciding a request that is no longer pending is a 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils import timezone

from orgmemory.domain import OrgFactAuthor
from orgmemory.models import OrgFact, WriteAccessRequest, WriteRequestDecision
from orgmemory.services.facts import (
    CATEGORY_IMMUTABLE,
    FACT_NOT_FOUND,
    FACT_RETRACTED,
    AuthorRecord,
    author_for,
    deny_write,
    publish_as,
    validate_write,
)
from orgmemory.write_access import (
    OrgMemoryAccessDeniedError,
    explain_write_access,
    require_human_author_for_core_policy,
)
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnprocessableError,
)

if TYPE_CHECKING:
    from persistence.models import Company
    from persistence.principal import Principal

AGENTS_ONLY = "Only agents file write-access requests; humans publish directly."
HUMANS_ONLY = "Only a human operator can decide a write-access request."
REQUEST_NOT_FOUND = "No write-access request with this id exists in your company."
REQUEST_UNNECESSARY = "You may write this category directly; no request is needed."
REQUEST_NOT_PERMITTED = "No human may approve writes to category '{category}': {reason}"
ALREADY_DECIDED = "This request was already {status}."
JUSTIFICATION_REQUIRED = "A justification is required."
REASON_REQUIRED = "A reason is required to reject a request."
UNKNOWN_DECISION = "decision must be 'approve' or 'reject'."

ACTION_FILED = AuditAction.ORG_WRITE_REQUEST_FILED
ACTION_APPROVED = AuditAction.ORG_WRITE_REQUEST_APPROVED
ACTION_REJECTED = AuditAction.ORG_WRITE_REQUEST_REJECTED

APPROVE = "approve"
REJECT = "reject"


def write_request_file(
    *,
    company: Company,
    actor: Principal,
    content: str,
    category: str,
    tags: list[str] | tuple[str, ...] = (),
    justification: str,
    fact_id=None,
) -> WriteAccessRequest:
    """File a write the agent may not make itself, for a human to decide.

    A core policy is never filed (``core_policy_human_only``): humans author them.
    Raises ``AccessDeniedError`` (a human caller), ``InvalidInputError`` (payload, blank
    justification, changed category), ``NotFoundError`` (no such fact),
    ``ConflictError`` (retracted fact), ``UnprocessableError`` (the agent may write it
    directly) and ``OrgMemoryAccessDeniedError`` (no human could approve it either).
    """
    if not actor.is_agent:
        raise AccessDeniedError(AGENTS_ONLY, code="agents_only")
    if actor.agent.company_id != company.pk:
        raise NotFoundError(REQUEST_NOT_FOUND, code="not_found")
    payload = validate_write(content=content, category=category, tags=tags)
    author = author_for(actor)
    require_human_author_for_core_policy(payload.category, author)
    justification = (justification or "").strip()
    if not justification:
        raise InvalidInputError(
            JUSTIFICATION_REQUIRED,
            code="justification_required",
            errors=[{"field": "justification", "message": JUSTIFICATION_REQUIRED, "code": "blank"}],
        )
    if fact_id is not None:
        try:
            fact = OrgFact.objects.get(company=company, fact_id=fact_id)
        except (OrgFact.DoesNotExist, DjangoValidationError, ValueError) as exc:
            raise NotFoundError(FACT_NOT_FOUND, code="fact_not_found") from exc
        if fact.category != payload.category:
            raise InvalidInputError(
                CATEGORY_IMMUTABLE.format(current=fact.category, requested=payload.category),
                code="fact_category_immutable",
            )
        if fact.retracted_at is not None:
            raise ConflictError(FACT_RETRACTED, code="fact_retracted")
        fact_id = fact.fact_id
    decision = explain_write_access(
        company_config(company).org_memory.write_access, payload.category, author
    )
    if decision.allowed:
        raise UnprocessableError(REQUEST_UNNECESSARY, code="write_request_unnecessary")
    if not decision.can_request:
        raise OrgMemoryAccessDeniedError(
            REQUEST_NOT_PERMITTED.format(category=payload.category, reason=decision.reason),
            code="write_request_not_permitted",
            extra=decision.problem_extra(author_is_human=False),
        )
    with transaction.atomic():
        request = WriteAccessRequest.objects.create(
            company=company,
            requester=actor.agent,
            requester_seniority=author.seniority,
            requester_autonomy_level=author.autonomy_level,
            fact_id=fact_id,
            category=payload.category,
            content=payload.content,
            tags=list(payload.tags),
            justification=justification,
            created_at=timezone.now(),
        )
        audit_record(
            company=company,
            action_type=ACTION_FILED,
            principal=actor,
            target_type="org_write_request",
            target_id=str(request.pk),
            details={"category": request.category, "fact_id": str(fact_id or "")},
        )
    return request


def write_request_decide(
    *,
    company: Company,
    actor: Principal,
    request_id,
    decision: str,
    reason: str = "",
) -> WriteAccessRequest:
    """Approve (publishing the fact) or reject (with a reason) a pending request.

    Raises ``AccessDeniedError`` (not a human), ``NotFoundError``, ``InvalidInputError``
    (unknown decision, rejection without a reason), ``ConflictError`` (already decided, or
    the fact was retracted/changed category meanwhile) and ``OrgMemoryAccessDeniedError``
    (the rules no longer let a human write the category; audited).
    """
    if not actor.is_human:
        raise AccessDeniedError(HUMANS_ONLY, code="humans_only")
    if decision not in (APPROVE, REJECT):
        raise InvalidInputError(UNKNOWN_DECISION, code="invalid_decision")
    reason = (reason or "").strip()
    if decision == REJECT and not reason:
        raise InvalidInputError(
            REASON_REQUIRED,
            code="rejection_reason_required",
            errors=[{"field": "reason", "message": REASON_REQUIRED, "code": "blank"}],
        )
    if decision == APPROVE:
        _require_human_may_approve(company=company, actor=actor, request_id=request_id)
    return _decide_locked(
        company=company, actor=actor, request_id=request_id, decision=decision, reason=reason
    )


def _require_human_may_approve(*, company: Company, actor: Principal, request_id) -> None:
    request = _request_or_404(WriteAccessRequest.objects.all(), company, request_id)
    config = company_config(company).org_memory.write_access
    access = explain_write_access(config, request.category, OrgFactAuthor(is_human=True))
    if not access.allowed:
        raise deny_write(
            company=company,
            principal=actor,
            decision=access,
            operation="approve_request",
            fact_id=request.fact_id,
        )


@transaction.atomic
def _decide_locked(
    *, company: Company, actor: Principal, request_id, decision: str, reason: str
) -> WriteAccessRequest:
    request = _request_or_404(
        WriteAccessRequest.objects.select_for_update(of=("self",)), company, request_id
    )
    if request.status != WriteAccessRequest.Status.PENDING:
        raise ConflictError(
            ALREADY_DECIDED.format(status=request.status),
            code="write_request_already_decided",
            extra={"request_status": request.status},
        )
    now = timezone.now()
    if decision == APPROVE:
        author = OrgFactAuthor(
            agent_id=str(request.requester_id),
            seniority=request.requester_seniority,
            autonomy_level=request.requester_autonomy_level,
            is_human=False,
        )
        payload = validate_write(
            content=request.content, category=request.category, tags=request.tags
        )
        if request.fact_id is not None:
            fact = OrgFact.objects.filter(company=company, fact_id=request.fact_id).first()
            if fact is not None and fact.category != request.category:
                raise ConflictError(
                    CATEGORY_IMMUTABLE.format(current=fact.category, requested=request.category),
                    code="fact_category_immutable",
                )
        entry = publish_as(
            company=company,
            payload=payload,
            record=AuthorRecord(
                author=author,
                agent=request.requester,
                approved_by=actor.user,
                write_request=request,
            ),
            fact_id=request.fact_id,
            audit_user=actor.user,
        )
        request.status = WriteAccessRequest.Status.APPROVED
        request.published_operation = entry
        request.fact_id = entry.fact_id
    else:
        request.status = WriteAccessRequest.Status.REJECTED
    request.decided_at = now
    request.decided_by = actor.user
    request.decision_reason = reason
    request.save(
        update_fields=[
            "status",
            "published_operation",
            "fact_id",
            "decided_at",
            "decided_by",
            "decision_reason",
        ]
    )
    WriteRequestDecision.objects.create(
        company=company,
        request=request,
        decision=decision,
        actor_user=actor.user,
        reason=reason,
        published_operation=request.published_operation,
        created_at=now,
    )
    audit_record(
        company=company,
        action_type=ACTION_APPROVED if decision == APPROVE else ACTION_REJECTED,
        principal=actor,
        target_type="org_write_request",
        target_id=str(request.pk),
        risk_level=AuditEntry.RiskLevel.MEDIUM,
        details={
            "decision": decision,
            "reason": reason,
            "requester": request.requester_id,
            "category": request.category,
            "fact_id": str(request.fact_id or ""),
        },
    )
    return request


def _request_or_404(queryset, company: Company, request_id) -> WriteAccessRequest:
    try:
        return queryset.select_related("requester").get(company=company, pk=request_id)
    except (WriteAccessRequest.DoesNotExist, DjangoValidationError, ValueError) as exc:
        raise NotFoundError(REQUEST_NOT_FOUND, code="write_request_not_found") from exc
