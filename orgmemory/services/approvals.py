"""The approval queue's write path: request, decide (first writer wins), consume, expire.

Every interface (REST, console, admin, the skill evolver, q2) calls these. Deciding is one
conditional ``UPDATE … WHERE status = 'pending' AND expires_at > now()``: of two humans
deciding at once exactly one row update succeeds, the other gets a 409 and changes
nothing. The decision, its append-only ``ApprovalDecision`` record, its audit entry, the
webhook delivery row and — for action types with a registered *applier* (a skill promotion
publishes an org fact) — the application itself commit in one transaction. An expiry writes
its ``ApprovalDecision`` (decision ``expire``, no user) the same way.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils import timezone

from orgmemory.approval_models import (
    MAX_TTL,
    MIN_TTL,
    RISK_LEVELS,
    ApprovalDecision,
    ApprovalItem,
)
from orgmemory.approval_presenters import presenter_for
from persistence.access import ROLE_RANK
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry
from persistence.services.audit import audit_record
from synthorg.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)

if TYPE_CHECKING:
    from persistence.models import Agent, Company, Task
    from persistence.principal import Principal

logger = logging.getLogger(__name__)

ITEM_NOT_FOUND = "No approval item with this id exists in your company."
DECIDERS_ONLY = "Only a human with role operator or above can decide approval items."
AGENTS_REQUEST_ONLY = "Only agents ask for approval through this endpoint."
ACTION_TYPE_RESERVED = (
    "{action_type} is filed by the service itself (approving it applies the action); an agent "
    "may not request it."
)
ALREADY_DECIDED = "This item was already {status}."
ITEM_EXPIRED = "This item expired at {expires_at}; it can no longer be decided."
REASON_REQUIRED = "A reason is required to reject an item."
UNKNOWN_DECISION = "decision must be 'approve' or 'reject'."
TTL_OUT_OF_RANGE = "ttl_seconds must be between 60 and 604800 (7 days)."
BLANK_FIELD = "{field} may not be blank."
INVALID_RISK = "risk_level must be one of low, medium, high, critical."
NOT_CONSUMABLE = "Only an approved item can be consumed; this one is {status}."
ALREADY_CONSUMED = "This item was already consumed at {consumed_at}."
NOT_YOUR_ITEM = "Only the agent that requested an item may consume it."
NOT_EDITABLE = (
    "Only a proposal (an item whose action type has editable parts) can be edited, and only "
    "to approve."
)
UNKNOWN_EDIT = "{field} is not an editable part of this proposal."
EDIT_BLANK = "{field} may not be blank."
EDIT_TOO_LONG = "{field} may be at most {limit} characters."
EDIT_LINES = "{field} must be 1 to {limit} non-blank lines."

ACTION_REQUESTED = AuditAction.APPROVAL_REQUESTED
ACTION_APPROVED = AuditAction.APPROVAL_APPROVED
ACTION_REJECTED = AuditAction.APPROVAL_REJECTED
ACTION_CONSUMED = AuditAction.APPROVAL_CONSUMED
ACTION_EXPIRED = AuditAction.APPROVAL_EXPIRED

APPROVE = "approve"
REJECT = "reject"

# action_type -> callable(item, actor) run inside the approving transaction.
Applier = Callable[[ApprovalItem, "Principal"], None]
_appliers: dict[str, Applier] = {}


def register_approval_applier(action_type: str, applier: Applier) -> None:
    """Let an app act on approval of its items (in the deciding transaction)."""
    _appliers[action_type] = applier


def has_applier(action_type: str) -> bool:
    """An app acts on approval of this action type: its items are the app's to file."""
    return action_type in _appliers


def default_ttl(action_type: str) -> timedelta:
    """The action type's presenter's TTL (1 day for an action type nobody registered)."""
    return presenter_for(action_type).ttl


def _not_blank(field: str, value: str) -> str:
    value = (value or "").strip()
    if not value:
        message = BLANK_FIELD.format(field=field)
        raise InvalidInputError(
            message,
            code="validation_error",
            errors=[{"field": field, "message": message, "code": "blank"}],
        )
    return value


def approval_request(
    *,
    company: Company,
    action_type: str,
    title: str,
    description: str = "",
    risk_level: str,
    source: str,
    requested_by: str = "",
    requester_agent: Agent | None = None,
    evidence: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    ttl: timedelta | None = None,
    task: Task | None = None,
    now: datetime | None = None,
) -> ApprovalItem:
    """Queue an action for a human decision (agents through the API; system components).

    ``requested_by`` defaults to the agent's name. Raises ``InvalidInputError``.
    """
    now = now or timezone.now()
    action_type = _not_blank("action_type", action_type)
    title = _not_blank("title", title)
    source = _not_blank("source", source)
    if requester_agent is not None:
        if requester_agent.company_id != company.pk:
            raise NotFoundError(ITEM_NOT_FOUND, code="approval_not_found")
        requested_by = requested_by or requester_agent.name
    requested_by = _not_blank("requested_by", requested_by)
    if risk_level not in RISK_LEVELS:
        raise InvalidInputError(
            INVALID_RISK,
            code="validation_error",
            errors=[{"field": "risk_level", "message": INVALID_RISK, "code": "invalid_choice"}],
        )
    ttl = ttl if ttl is not None else default_ttl(action_type)
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise InvalidInputError(
            TTL_OUT_OF_RANGE,
            code="validation_error",
            errors=[{"field": "ttl_seconds", "message": TTL_OUT_OF_RANGE, "code": "out_of_range"}],
        )
    if task is not None and task.company_id != company.pk:
        raise NotFoundError("No task with this id exists in your company.", code="task_not_found")
    with transaction.atomic():
        item = ApprovalItem.objects.create(
            company=company,
            action_type=action_type,
            title=title,
            description=(description or "").strip(),
            requested_by=requested_by,
            requester_agent=requester_agent,
            risk_level=risk_level,
            source=source,
            created_at=now,
            expires_at=now + ttl,
            task=task,
            evidence=dict(evidence or {}),
            metadata=dict(metadata or {}),
        )
        audit_record(
            company=company,
            action_type=ACTION_REQUESTED,
            actor_agent=requester_agent,
            target_type="approval_item",
            target_id=str(item.pk),
            risk_level=risk_level,
            details={"item_action_type": action_type, "source": source, "title": title},
        )
        _notify(item, "approval.pending")
    return item


def require_decider(actor: Principal) -> None:
    """Humans with role operator or above decide; agents and viewers may not."""
    if not actor.is_human or ROLE_RANK.get(actor.role, -1) < ROLE_RANK["operator"]:
        raise AccessDeniedError(DECIDERS_ONLY, code="approval_decider_required")


def approval_decide(
    *,
    company: Company,
    actor: Principal,
    item_id,
    decision: str,
    reason: str = "",
    edits: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> ApprovalItem:
    """Approve or reject (with a reason) a pending, unexpired item; the first writer wins.

    ``edits`` (edit-then-approve): new values for some of the proposal's parts, the ones the
    action type's presenter names editable (:mod:`orgmemory.approval_presenters`; a list for
    a ``many`` field). They replace those parts of the item's ``metadata["proposal"]``
    (dropping the presenter's ``stale_on_edit`` renderings) before the applier runs, so what
    is published is the edited text; the before/after and a unified diff go into the append-only
    ``ApprovalDecision`` and the audit entry names the edited fields. Unchanged values are
    not edits. Raises ``InvalidInputError`` (``approval_not_editable``,
    ``invalid_edit``).

    Raises ``AccessDeniedError`` (agent, viewer), ``InvalidInputError`` (unknown decision,
    rejection without reason), ``NotFoundError`` and ``ConflictError`` (already decided:
    ``approval_already_decided``; expired: ``approval_expired``). An applier's domain error
    rolls the decision back.
    """
    require_decider(actor)
    if decision not in (APPROVE, REJECT):
        raise InvalidInputError(UNKNOWN_DECISION, code="invalid_decision")
    reason = (reason or "").strip()
    if decision == REJECT and not reason:
        raise InvalidInputError(
            REASON_REQUIRED,
            code="rejection_reason_required",
            errors=[{"field": "reason", "message": REASON_REQUIRED, "code": "blank"}],
        )
    current = _item_or_404(company, item_id)
    changes = _edits(current, edits, decision) if edits else {}
    now = now or timezone.now()
    status = ApprovalItem.Status.APPROVED if decision == APPROVE else ApprovalItem.Status.REJECTED
    with transaction.atomic():
        updated = ApprovalItem.objects.filter(
            company=company,
            pk=item_id,
            status=ApprovalItem.Status.PENDING,
            expires_at__gt=now,
        ).update(
            status=status,
            decided_at=now,
            decided_by=actor.user,
            decision_reason=reason if decision == REJECT else "",
        )
        item = ApprovalItem.objects.select_for_update().get(company=company, pk=item_id)
        if not updated:
            raise _undecidable(item)
        if changes:
            proposal = dict(item.metadata["proposal"])
            original = item.metadata.get("original_proposal", item.metadata["proposal"])
            proposal.update({name: change["after"] for name, change in changes.items()})
            for stale in presenter_for(item.action_type).stale_on_edit:
                proposal.pop(stale, None)  # a rendering of the old parts; the applier renders
            item.metadata = {**item.metadata, "proposal": proposal, "original_proposal": original}
            item.save(update_fields=["metadata"])
        ApprovalDecision.objects.create(
            company=company,
            item=item,
            decision=decision,
            actor_user=actor.user,
            reason=item.decision_reason,
            edits={"fields": changes, "diff": _diff(changes)} if changes else {},
            created_at=now,
        )
        audit_record(
            company=company,
            action_type=ACTION_APPROVED if decision == APPROVE else ACTION_REJECTED,
            principal=actor,
            target_type="approval_item",
            target_id=str(item.pk),
            risk_level=item.risk_level,
            details={
                "decision": decision,
                "reason": item.decision_reason,
                "item_action_type": item.action_type,
                **({"edited_fields": sorted(changes)} if changes else {}),
            },
        )
        applier = _appliers.get(item.action_type)
        if decision == APPROVE and applier is not None:
            applier(item, actor)
            item.refresh_from_db()
        _notify(item, f"approval.{item.status}")
        _notify(item, "approval.decided")  # one event for either decision (its status says which)
    return item


def _invalid_edit(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(
        message,
        code="invalid_edit",
        errors=[{"field": field, "message": message, "code": "invalid"}],
    )


def _edits(item: ApprovalItem, edits: Mapping[str, Any], decision: str) -> dict[str, dict]:
    """The changed parts as ``{name: {"before", "after"}}`` (validated, normalised)."""
    proposal = item.metadata.get("proposal") if isinstance(item.metadata, dict) else None
    presenter = presenter_for(item.action_type)
    if decision != APPROVE or not isinstance(proposal, dict) or not presenter.editable:
        raise InvalidInputError(NOT_EDITABLE, code="approval_not_editable")
    changes: dict[str, dict] = {}
    for name, value in edits.items():
        spec = presenter.editable_field(name)
        if spec is None or name not in proposal:
            raise _invalid_edit(name, UNKNOWN_EDIT.format(field=name))
        after: Any
        if spec.many:
            lines = [str(s).strip() for s in value] if isinstance(value, list | tuple) else []
            if not 1 <= len(lines) <= spec.max_items or not all(lines):
                raise _invalid_edit(name, EDIT_LINES.format(field=name, limit=spec.max_items))
            if any(len(line) > spec.max_chars for line in lines):
                raise _invalid_edit(name, EDIT_TOO_LONG.format(field=name, limit=spec.max_chars))
            after = lines
        else:
            after = str(value or "").strip()
            if not after:
                raise _invalid_edit(name, EDIT_BLANK.format(field=name))
            if len(after) > spec.max_chars:
                raise _invalid_edit(name, EDIT_TOO_LONG.format(field=name, limit=spec.max_chars))
        if after != proposal[name]:
            changes[name] = {"before": proposal[name], "after": after}
    return changes


def _lines(value: Any) -> list[str]:
    if isinstance(value, list):
        return [f"{n}. {step}" for n, step in enumerate(value, 1)]
    return str(value).splitlines()


def _diff(changes: Mapping[str, Mapping[str, Any]]) -> str:
    """One unified diff over the edited parts, each part a file named after it."""
    out: list[str] = []
    for name in sorted(changes):
        out += difflib.unified_diff(
            _lines(changes[name]["before"]),
            _lines(changes[name]["after"]),
            fromfile=f"{name} (proposed)",
            tofile=f"{name} (approved)",
            lineterm="",
        )
    return "\n".join(out)


def _undecidable(item: ApprovalItem) -> ConflictError:
    if item.status == ApprovalItem.Status.PENDING or item.status == ApprovalItem.Status.EXPIRED:
        return ConflictError(
            ITEM_EXPIRED.format(expires_at=item.expires_at.isoformat()),
            code="approval_expired",
            extra={"item_status": ApprovalItem.Status.EXPIRED},
        )
    return ConflictError(
        ALREADY_DECIDED.format(status=item.status),
        code="approval_already_decided",
        extra={
            "item_status": item.status,
            "decided_by": getattr(item.decided_by, "username", None),
            "decided_at": item.decided_at.isoformat() if item.decided_at else None,
        },
    )


@transaction.atomic
def approval_consume(
    *,
    company: Company,
    item_id,
    actor: Principal | None = None,
    now: datetime | None = None,
) -> ApprovalItem:
    """Mark an approved item as applied, once. ``actor`` None is the system (an applier).

    An agent may consume only the items it requested. Raises ``NotFoundError``,
    ``AccessDeniedError`` and ``ConflictError`` (not approved, or already consumed).
    """
    now = now or timezone.now()
    item = _item_or_404(company, item_id, lock=True)
    if actor is not None and actor.is_agent and item.requester_agent_id != actor.agent.pk:
        raise AccessDeniedError(NOT_YOUR_ITEM, code="approval_not_requester")
    if item.status != ApprovalItem.Status.APPROVED:
        raise ConflictError(
            NOT_CONSUMABLE.format(status=item.status),
            code="approval_not_approved",
            extra={"item_status": item.status},
        )
    if item.consumed_at is not None:
        raise ConflictError(
            ALREADY_CONSUMED.format(consumed_at=item.consumed_at.isoformat()),
            code="approval_already_consumed",
        )
    item.consumed_at = max(now, item.decided_at)
    item.save(update_fields=["consumed_at"])
    audit_record(
        company=company,
        action_type=ACTION_CONSUMED,
        principal=actor,
        target_type="approval_item",
        target_id=str(item.pk),
        details={"item_action_type": item.action_type},
    )
    return item


def approval_expire_overdue(*, now: datetime | None = None) -> int:
    """Mark every pending item past its ``expires_at`` expired (all companies); audited."""
    now = now or timezone.now()
    expired = 0
    with transaction.atomic():
        items = list(
            ApprovalItem.objects.select_for_update(skip_locked=True)
            .filter(status=ApprovalItem.Status.PENDING, expires_at__lte=now)
            .order_by("expires_at")
        )
        for item in items:
            item.status = ApprovalItem.Status.EXPIRED
            item.save(update_fields=["status"])
            ApprovalDecision.objects.create(
                company_id=item.company_id,
                item=item,
                decision=ApprovalDecision.Decision.EXPIRE,
                actor_user=None,
                created_at=now,
            )
            audit_record(
                company=item.company,
                action_type=ACTION_EXPIRED,
                target_type="approval_item",
                target_id=str(item.pk),
                risk_level=AuditEntry.RiskLevel.LOW,
                details={"item_action_type": item.action_type},
            )
            _notify(item, "approval.expired")
            expired += 1
    if expired:
        logger.info("expired %d approval item(s)", expired)
    return expired


def _item_or_404(company: Company, item_id, *, lock: bool = False) -> ApprovalItem:
    queryset = ApprovalItem.objects.select_for_update() if lock else ApprovalItem.objects
    try:
        return queryset.get(company=company, pk=item_id)
    except (ApprovalItem.DoesNotExist, DjangoValidationError, ValueError) as exc:
        raise NotFoundError(ITEM_NOT_FOUND, code="approval_not_found") from exc


def _notify(item: ApprovalItem, event: str) -> None:
    from orgmemory.services.webhooks import webhook_enqueue

    webhook_enqueue(item=item, event=event)
