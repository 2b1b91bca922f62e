"""The humans' one inbox: approval items and org write-access requests as one list.

Write-access requests keep their own model and service (they publish the agent's fact
when approved); this selector presents both kinds as :class:`Decision` rows so the console
lists, counts and filters them together, pending first. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, QuerySet
from django.utils import timezone

from orgmemory.approval_models import ApprovalItem, WebhookDelivery
from orgmemory.models import WriteAccessRequest
from orgmemory.services.approvals import ITEM_NOT_FOUND
from synthorg.errors import NotFoundError

if TYPE_CHECKING:
    from persistence.models import Company
    from persistence.principal import Principal

KIND_APPROVAL = "approval"
KIND_WRITE_REQUEST = "write_request"
WRITE_REQUEST_ACTION = "org_write_request"
WRITE_REQUEST_RISK = "medium"
STATUSES = ("pending", "approved", "rejected", "expired")
RISKS = ("low", "medium", "high", "critical")


@dataclass(frozen=True)
class Decision:
    kind: str
    id: str
    action_type: str
    title: str
    risk_level: str
    status: str
    requested_by: str
    created_at: datetime
    expires_at: datetime | None
    decided_at: datetime | None
    decided_by: str | None

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"


@dataclass(frozen=True)
class Inbox:
    decisions: list[Decision]
    counts: dict[str, int]  # per status, over every kind and risk (before filters)
    action_types: list[str]
    truncated: bool = False  # a kind had more than ``limit`` matching rows


def effective_status(item: ApprovalItem, now: datetime | None = None) -> str:
    now = now or timezone.now()
    # An unswept item past its expiry is already undecidable; show it as expired.
    if item.status == ApprovalItem.Status.PENDING and item.expires_at <= now:
        return ApprovalItem.Status.EXPIRED
    return item.status


def _from_item(item: ApprovalItem, now: datetime) -> Decision:
    return Decision(
        kind=KIND_APPROVAL,
        id=str(item.pk),
        action_type=item.action_type,
        title=item.title,
        risk_level=item.risk_level,
        status=effective_status(item, now),
        requested_by=item.requested_by,
        created_at=item.created_at,
        expires_at=item.expires_at,
        decided_at=item.decided_at,
        decided_by=item.decided_by.get_username() if item.decided_by_id else None,
    )


def _from_request(request: WriteAccessRequest) -> Decision:
    return Decision(
        kind=KIND_WRITE_REQUEST,
        id=str(request.pk),
        action_type=WRITE_REQUEST_ACTION,
        title=f"Write {request.category}: {request.content[:80]}",
        risk_level=WRITE_REQUEST_RISK,
        status=request.status,
        requested_by=request.requester.name,
        created_at=request.created_at,
        expires_at=None,
        decided_at=request.decided_at,
        decided_by=request.decided_by.get_username() if request.decided_by_id else None,
    )


def pending_decisions(
    *,
    company: Company,
    status: str | None = None,
    risk_level: str | None = None,
    kind: str | None = None,
    action_type: str | None = None,
    limit: int = 200,
    now: datetime | None = None,
) -> Inbox:
    """Everything humans decide in ``company``: pending first (oldest first, so the item
    closest to expiry is on top), then decided ones newest first. ``limit`` per kind."""
    now = now or timezone.now()
    items = ApprovalItem.objects.filter(company=company).select_related("decided_by")
    requests = WriteAccessRequest.objects.filter(company=company).select_related(
        "requester", "decided_by"
    )
    # One GROUP BY over the (company, status, …) index, plus the few overdue pending rows.
    by_status = dict(
        items.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    overdue = items.filter(status="pending", expires_at__lte=now).order_by().count()
    by_status["pending"] = by_status.get("pending", 0) - overdue
    by_status["expired"] = by_status.get("expired", 0) + overdue
    request_counts = dict(
        requests.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    counts = {s: by_status.get(s, 0) + request_counts.get(s, 0) for s in STATUSES}
    # The action types currently waiting (a DISTINCT over every item would read them all).
    action_types = sorted(
        set(
            items.filter(status="pending")
            .order_by()
            .values_list("action_type", flat=True)
            .distinct()
        )
        | ({WRITE_REQUEST_ACTION} if request_counts.get("pending") else set())
        | ({action_type} if action_type else set())
    )
    if status == "pending":
        items = items.filter(status="pending", expires_at__gt=now)
    elif status == "expired":
        items = items.filter(status__in=["pending", "expired"], expires_at__lte=now)
    elif status:
        items = items.filter(status=status)
    if status:
        requests = requests.filter(status=status)
    if risk_level:
        items = items.filter(risk_level=risk_level)
        if risk_level != WRITE_REQUEST_RISK:
            requests = requests.none()
    if action_type:
        items = items.filter(action_type=action_type)
        if action_type != WRITE_REQUEST_ACTION:
            requests = requests.none()
    decisions: list[Decision] = []
    truncated = False
    if kind in (None, "", KIND_APPROVAL):
        rows = list(items.order_by("-created_at", "-id")[: limit + 1])
        truncated |= len(rows) > limit
        decisions += [_from_item(i, now) for i in rows[:limit]]
    if kind in (None, "", KIND_WRITE_REQUEST):
        rows = list(requests.order_by("-created_at", "-id")[: limit + 1])
        truncated |= len(rows) > limit
        decisions += [_from_request(r) for r in rows[:limit]]
    decisions.sort(key=lambda d: d.created_at, reverse=True)
    pending = [d for d in decisions if d.is_pending]
    pending.sort(key=lambda d: d.created_at)
    decisions = pending + [d for d in decisions if not d.is_pending]
    return Inbox(
        decisions=decisions,
        counts=counts,
        action_types=action_types,
        truncated=truncated,
    )


def pending_count(*, company: Company, now: datetime | None = None) -> int:
    now = now or timezone.now()
    return (
        ApprovalItem.objects.filter(company=company, status="pending", expires_at__gt=now).count()
        + WriteAccessRequest.objects.filter(company=company, status="pending").count()
    )


def webhook_failures(*, company: Company, limit: int = 20) -> list[WebhookDelivery]:
    """Deliveries that failed for good or are retrying after an error, newest first."""
    return list(
        WebhookDelivery.objects.filter(company=company)
        .exclude(last_error="")
        .exclude(status=WebhookDelivery.Status.DELIVERED)
        .select_related("item")
        .order_by("-created_at")[:limit]
    )


def approval_items_for(
    *,
    principal: Principal,
    status: str | None = None,
    risk_level: str | None = None,
    action_type: str | None = None,
    source: str | None = None,
) -> QuerySet[ApprovalItem]:
    """Items the principal may see: a human all of the company's, an agent those it asked."""
    queryset = ApprovalItem.objects.filter(company=principal.company).select_related("decided_by")
    if principal.is_agent:
        queryset = queryset.filter(requester_agent=principal.agent)
    filters = {
        "status": status,
        "risk_level": risk_level,
        "action_type": action_type,
        "source": source,
    }
    queryset = queryset.filter(**{k: v for k, v in filters.items() if v})
    return queryset.order_by("-created_at", "-id")


def approval_item_for(*, principal: Principal, item_id) -> ApprovalItem:
    try:
        return approval_items_for(principal=principal).get(pk=item_id)
    except (ApprovalItem.DoesNotExist, DjangoValidationError, ValueError) as exc:
        raise NotFoundError(ITEM_NOT_FOUND, code="approval_not_found") from exc
