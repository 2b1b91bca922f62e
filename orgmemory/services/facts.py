"""Writes to org memory: publish and retract facts.

Every write appends one :class:`~orgmemory.models.OperationLogEntry` and updates the
fact's :class:`~orgmemory.models.OrgFact` snapshot in the same transaction, with an audit
entry. Writers of one fact serialise on the snapshot row (``SELECT … FOR UPDATE``), so
versions are gap-free; ``expected_version`` turns a lost race into a clean 409, and the
``(fact_id, version)`` unique constraint is the last line of defence.

A denied write is audited (verdict ``denied``) in its own transaction, then raised as
:class:`~orgmemory.write_access.OrgMemoryAccessDeniedError` (403).
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from orgmemory.domain import OrgFactAuthor, OrgFactWriteRequest
from orgmemory.embedding import embed_fact
from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.embeddings import fact_vectors_store
from orgmemory.write_access import (
    OrgMemoryAccessDeniedError,
    WriteAccessDecision,
    explain_write_access,
    require_human_author_for_core_policy,
)
from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.enums import OrgFactCategory
from synthorg.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    invalid_input_from,
)

if TYPE_CHECKING:
    import numpy as np

    from orgmemory.models import WriteAccessRequest
    from persistence.models import Agent, Company
    from persistence.principal import Principal

FACT_NOT_FOUND = "No org fact with this id exists in your company."
FACT_RETRACTED = "The fact has been retracted; publish a new fact instead."
CATEGORY_IMMUTABLE = "A fact keeps its category: it is '{current}', not '{requested}'."
VERSION_CONFLICT = "The fact is at version {current}, not the expected version {expected}."
CONCURRENT_WRITE = "Another write to this fact committed first; retry with its new version."

ACTOR_COMPANY_MISMATCH = "The actor does not belong to this company."
INVALID_FACT = "The fact is invalid: {error}"
APPROVER_HUMAN_ONLY = "Only a human approver can have the system apply an approved write."

ACTION_PUBLISHED = AuditAction.ORG_FACT_PUBLISHED
ACTION_RETRACTED = AuditAction.ORG_FACT_RETRACTED
ACTION_WRITE_DENIED = AuditAction.ORG_FACT_WRITE_DENIED


@contextmanager
def _version_conflicts():
    """A concurrent append of the same fact version (the log's unique version, or the fact's
    primary key for a first version) surfaces as 409 ``fact_version_conflict``."""
    try:
        yield
    except IntegrityError as exc:
        if "orglog_fact_version" in str(exc) or "orgmemory_orgfact_pkey" in str(exc):
            raise ConflictError(CONCURRENT_WRITE, code="fact_version_conflict") from exc
        raise


@dataclass(frozen=True)
class AuthorRecord:
    """The author columns of one log row."""

    author: OrgFactAuthor
    agent: Agent | None = None
    user: object | None = None
    approved_by: object | None = None
    write_request: WriteAccessRequest | None = None
    #: the approval item the system applies on behalf of ``approved_by``
    approval_item_id: str | None = None


def author_for(principal: Principal) -> OrgFactAuthor:
    if principal.is_agent:
        agent = principal.agent
        return OrgFactAuthor(
            agent_id=str(agent.pk),
            seniority=agent.seniority,
            autonomy_level=agent.autonomy_level,
            role=agent.role,
            department=agent.department,
            is_human=False,
        )
    return OrgFactAuthor(is_human=True)


def validate_write(
    *, content: str, category: str, tags: list[str] | tuple[str, ...] = ()
) -> OrgFactWriteRequest:
    try:
        return OrgFactWriteRequest(content=content, category=category, tags=tuple(tags))
    except ValidationError as exc:
        raise invalid_input_from(exc, INVALID_FACT, code="invalid_fact") from exc


def _require_role_for_core_policy(actor: Principal, category: str, action: str) -> None:
    """Core policies reach every agent's prompt: a human needs the admin role to change one
    (``persistence.access``); agents are refused by the write rule."""
    if category == OrgFactCategory.CORE_POLICY and actor.is_human:
        require_write(actor, "core_policy", action)


def _check_actor(company: Company, principal: Principal) -> None:
    if principal.company.pk != company.pk or (
        principal.is_agent and principal.agent.company_id != company.pk
    ):
        raise NotFoundError(ACTOR_COMPANY_MISMATCH, code="not_found")


def _fact_or_404(company: Company, fact_id) -> OrgFact:
    try:
        return OrgFact.objects.get(company=company, fact_id=fact_id)
    except (OrgFact.DoesNotExist, DjangoValidationError, ValueError, TypeError) as exc:
        # The others: not a UUID. Either way the fact does not exist for the caller.
        raise NotFoundError(FACT_NOT_FOUND, code="fact_not_found") from exc


def deny_write(
    *,
    company: Company,
    principal: Principal,
    decision: WriteAccessDecision,
    operation: str,
    fact_id=None,
) -> OrgMemoryAccessDeniedError:
    """Audit a denied write (committed on its own) and return the error to raise."""
    author = author_for(principal)
    with transaction.atomic():
        audit_record(
            company=company,
            action_type=ACTION_WRITE_DENIED,
            principal=principal,
            target_type="org_fact",
            target_id=str(fact_id or ""),
            verdict=AuditEntry.Verdict.DENIED,
            risk_level=AuditEntry.RiskLevel.MEDIUM,
            details={
                "operation": operation,
                "category": str(decision.category),
                "reason": decision.reason,
                "author_seniority": author.seniority,
            },
        )
    return OrgMemoryAccessDeniedError(
        f"Write to org memory denied: {decision.reason}",
        extra=decision.problem_extra(author_is_human=author.is_human),
    )


def fact_publish(
    *,
    company: Company,
    actor: Principal,
    content: str,
    category: str,
    tags: list[str] | tuple[str, ...] | None = None,
    fact_id: uuid.UUID | str | None = None,
    expected_version: int | None = None,
) -> OperationLogEntry:
    """Publish a new fact (``fact_id`` omitted) or a new version of an existing one.

    ``tags=None`` publishes a new fact without tags, and a new version with the tags of the
    version it replaces (read under the fact's lock); pass ``[]`` to clear them.

    Raises ``InvalidInputError`` (bad payload, changed category), ``NotFoundError`` (no such
    fact in the company), ``OrgMemoryAccessDeniedError`` (write rule; audited),
    ``ConflictError`` (retracted, ``expected_version`` mismatch, lost race).
    """
    _check_actor(company, actor)
    payload = validate_write(content=content, category=category, tags=tags or ())
    _require_role_for_core_policy(actor, payload.category, UPDATE if fact_id else CREATE)
    if fact_id is not None:
        current = _fact_or_404(company, fact_id)
        if current.category != payload.category:
            raise InvalidInputError(
                CATEGORY_IMMUTABLE.format(current=current.category, requested=payload.category),
                code="fact_category_immutable",
            )
    author = author_for(actor)
    config = company_config(company).org_memory.write_access
    decision = explain_write_access(config, payload.category, author)
    if not decision.allowed:
        raise deny_write(
            company=company,
            principal=actor,
            decision=decision,
            operation="publish",
            fact_id=fact_id,
        )
    record = AuthorRecord(author=author, agent=actor.agent, user=actor.user)
    return publish_as(
        company=company,
        payload=payload,
        record=record,
        fact_id=fact_id,
        expected_version=expected_version,
        audit_principal=actor,
        keep_tags=tags is None,
    )


def publish_as(
    *,
    company: Company,
    payload: OrgFactWriteRequest,
    record: AuthorRecord,
    fact_id=None,
    expected_version: int | None = None,
    audit_principal: Principal | None = None,
    audit_user=None,
    keep_tags: bool = False,
) -> OperationLogEntry:
    """Append a PUBLISH row for an already-authorised write (used by approvals too).

    ``keep_tags``: a new version takes the current version's tags instead of the payload's.
    Raises ``OrgMemoryAccessDeniedError`` (``core_policy_human_only``) when the author of a
    core policy would not be a human, whoever approved it.
    """
    require_human_author_for_core_policy(payload.category, record.author)
    embedded = embed_fact(
        payload.content, company=company
    )  # outside the lock: model inference is slow-ish
    with _version_conflicts():
        return _publish_locked(
            company=company,
            payload=payload,
            record=record,
            fact_id=fact_id,
            expected_version=expected_version,
            embedded=embedded,
            audit_principal=audit_principal,
            audit_user=audit_user,
            keep_tags=keep_tags,
        )


@transaction.atomic
def _publish_locked(
    *,
    company: Company,
    payload: OrgFactWriteRequest,
    record: AuthorRecord,
    fact_id,
    expected_version: int | None,
    embedded: tuple[str, list[np.ndarray]] | None,
    audit_principal: Principal | None,
    audit_user,
    keep_tags: bool = False,
) -> OperationLogEntry:
    now = timezone.now()
    if fact_id is None:
        if expected_version not in (None, 0):
            raise ConflictError(
                VERSION_CONFLICT.format(current=0, expected=expected_version),
                code="fact_version_conflict",
            )
        snapshot = None
        fact_uuid = uuid.uuid4()
        version = 1
    else:
        snapshot = _locked_fact(company, fact_id)
        if snapshot.retracted_at is not None:
            raise ConflictError(FACT_RETRACTED, code="fact_retracted")
        _check_expected(snapshot, expected_version)
        fact_uuid = snapshot.fact_id
        version = snapshot.version + 1
        if keep_tags:
            payload = payload.model_copy(update={"tags": tuple(snapshot.tags)})
        now = _after(snapshot, now)
    if snapshot is None:
        OrgFact.objects.create(
            fact_id=fact_uuid,
            company=company,
            category=payload.category,
            content=payload.content,
            tags=list(payload.tags),
            version=version,
            created_at=now,
            updated_at=now,
        )
    entry = OperationLogEntry.objects.create(
        company=company,
        fact_id=fact_uuid,
        version=version,
        operation_type=OperationLogEntry.Operation.PUBLISH,
        content=payload.content,
        category=payload.category,
        tags=list(payload.tags),
        timestamp=now,
        **_author_columns(record),
    )
    previous_content = None if snapshot is None else snapshot.content
    if snapshot is not None:
        snapshot.content = payload.content
        snapshot.tags = list(payload.tags)
        snapshot.version = version
        snapshot.updated_at = now
        snapshot.save(update_fields=["content", "tags", "version", "updated_at"])
    if embedded is not None:
        fact_vectors_store(
            entries=[entry], embedder_id=embedded[0], vectors=[embedded[1]], replace=False
        )
    audit_record(
        company=company,
        action_type=ACTION_PUBLISHED,
        principal=audit_principal,
        actor_user=audit_user,
        target_type="org_fact",
        target_id=str(fact_uuid),
        risk_level=AuditEntry.RiskLevel.MEDIUM,
        details=_audit_details(entry, record, previous_content=previous_content),
    )
    return entry


def fact_retract(
    *,
    company: Company,
    actor: Principal,
    fact_id,
    expected_version: int | None = None,
    reason: str = "",
) -> OperationLogEntry:
    """Retract a fact: a RETRACT row (no content) and ``retracted_at`` on the snapshot.

    The same write rule as publishing applies to the fact's category.
    """
    _check_actor(company, actor)
    current = _fact_or_404(company, fact_id)
    _require_role_for_core_policy(actor, current.category, DELETE)
    author = author_for(actor)
    config = company_config(company).org_memory.write_access
    decision = explain_write_access(config, current.category, author)
    if not decision.allowed:
        raise deny_write(
            company=company,
            principal=actor,
            decision=decision,
            operation="retract",
            fact_id=current.fact_id,
        )
    record = AuthorRecord(author=author, agent=actor.agent, user=actor.user)
    with _version_conflicts():
        return _retract_locked(
            company=company,
            fact_id=current.fact_id,
            record=record,
            expected_version=expected_version,
            reason=reason,
            actor=actor,
        )


def _approval_record(company: Company, approver: Principal, category, approval_item_id):
    """The author record of a write the system applies because ``approver`` approved it.

    The approval is the authorisation: the category's write rule is not asked whether the
    approver could write it themselves (a rule that excludes humans must not block a human
    from approving what the system proposed) — only whether the category has a rule at all
    (no rule: nobody may write it, the system included).
    """
    _check_actor(company, approver)
    if not approver.is_human:
        raise AccessDeniedError(APPROVER_HUMAN_ONLY, code="approver_human_required")
    config = company_config(company).org_memory.write_access
    decision = explain_write_access(config, category, author_for(approver))
    if decision.rule is None:
        raise deny_write(
            company=company,
            principal=approver,
            decision=decision,
            operation="publish",
            fact_id=None,
        )
    # The log's author columns know a human or an agent (approved_by is for agent-authored
    # rows: orglog_approval_for_agents); the approver is the accountable human author, and
    # the audit entry (actor: the system, on behalf of the approver) says how it got there.
    return AuthorRecord(
        author=OrgFactAuthor(is_human=True),
        user=approver.user,
        approval_item_id=str(approval_item_id),
    )


def fact_publish_approved(
    *,
    company: Company,
    approver: Principal,
    approval_item_id,
    content: str,
    category: str,
    tags: list[str] | tuple[str, ...] | None = None,
) -> OperationLogEntry:
    """Publish a new fact as the system, on behalf of the human who approved
    ``approval_item_id`` (an approval applier's write). See :func:`_approval_record`."""
    payload = validate_write(content=content, category=category, tags=tags or ())
    record = _approval_record(company, approver, payload.category, approval_item_id)
    return publish_as(company=company, payload=payload, record=record)


def fact_retract_approved(
    *, company: Company, approver: Principal, approval_item_id, fact_id, reason: str
) -> OperationLogEntry:
    """Retract a fact as the system, on behalf of the approver of ``approval_item_id``."""
    current = _fact_or_404(company, fact_id)
    record = _approval_record(company, approver, current.category, approval_item_id)
    with _version_conflicts():
        return _retract_locked(
            company=company,
            fact_id=current.fact_id,
            record=record,
            expected_version=None,
            reason=reason,
            actor=None,
        )


@transaction.atomic
def _retract_locked(
    *, company, fact_id, record: AuthorRecord, expected_version, reason: str, actor
) -> OperationLogEntry:
    snapshot = _locked_fact(company, fact_id)
    if snapshot.retracted_at is not None:
        raise ConflictError(FACT_RETRACTED, code="fact_retracted")
    _check_expected(snapshot, expected_version)
    now = _after(snapshot, timezone.now())
    entry = OperationLogEntry.objects.create(
        company=company,
        fact_id=snapshot.fact_id,
        version=snapshot.version + 1,
        operation_type=OperationLogEntry.Operation.RETRACT,
        content=None,
        category=snapshot.category,
        tags=list(snapshot.tags),
        timestamp=now,
        **_author_columns(record),
    )
    snapshot.version = entry.version
    snapshot.updated_at = now
    snapshot.retracted_at = now
    snapshot.save(update_fields=["version", "updated_at", "retracted_at"])
    audit_record(
        company=company,
        action_type=ACTION_RETRACTED,
        principal=actor,
        target_type="org_fact",
        target_id=str(snapshot.fact_id),
        risk_level=AuditEntry.RiskLevel.MEDIUM,
        details={
            **_audit_details(entry, record, previous_content=snapshot.content),
            "reason": reason,
        },
    )
    return entry


def _locked_fact(company: Company, fact_id) -> OrgFact:
    try:
        return OrgFact.objects.select_for_update().get(company=company, fact_id=fact_id)
    except OrgFact.DoesNotExist as exc:
        raise NotFoundError(FACT_NOT_FOUND, code="fact_not_found") from exc


def _after(snapshot: OrgFact, now):
    """A timestamp strictly after the fact's last one, so "as of T" is never ambiguous."""
    return max(now, snapshot.updated_at + timedelta(microseconds=1))


def _check_expected(snapshot: OrgFact, expected_version: int | None) -> None:
    if expected_version is not None and expected_version != snapshot.version:
        raise ConflictError(
            VERSION_CONFLICT.format(current=snapshot.version, expected=expected_version),
            code="fact_version_conflict",
            extra={"current_version": snapshot.version},
        )


def _author_columns(record: AuthorRecord) -> dict:
    author = record.author
    return {
        "author_is_human": author.is_human,
        "author_agent": None if author.is_human else record.agent,
        "author_seniority": author.seniority,
        "author_autonomy_level": author.autonomy_level,
        "author_user": record.user if author.is_human else None,
        "approved_by": record.approved_by,
        "write_request": record.write_request,
    }


def _audit_details(
    entry: OperationLogEntry, record: AuthorRecord, *, previous_content: str | None = None
) -> dict:
    """What the audit entry of one log row says. A core policy's carries its old and new
    text (``previous_content`` / ``content``): the block every agent receives changed."""
    details = {
        "operation_id": str(entry.operation_id),
        "operation": entry.operation_type,
        "version": entry.version,
        "category": entry.category,
        "author_is_human": record.author.is_human,
        "author_seniority": record.author.seniority,
    }
    if entry.category == OrgFactCategory.CORE_POLICY:
        details["previous_content"] = previous_content
        details["content"] = entry.content
    if record.approved_by is not None:
        details["approved_by"] = record.approved_by.pk
    if record.write_request is not None:
        details["write_request"] = str(record.write_request.pk)
    if record.approval_item_id is not None:
        details["actor"] = "system"
        details["on_behalf_of"] = record.user.get_username()
        details["approval_item"] = record.approval_item_id
    return details
