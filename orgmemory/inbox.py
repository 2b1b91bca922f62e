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
from django.db import connection
from django.db.models import (
    Case,
    CharField,
    DateTimeField,
    F,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Cast, Concat, Substr
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


#: the bounded counts stop here: "1000+" costs at most this many index entries to find
COUNT_CAP = 1000
PAGE_SIZE = 50
SORT_EXPIRY = "expiry"
SORT_NEWEST = "newest"
SORT_OLDEST = "oldest"
SORT_RISK = "risk"
SORTS = (SORT_EXPIRY, SORT_RISK, SORT_NEWEST, SORT_OLDEST)


@dataclass(frozen=True)
class InboxFilters:
    """What the operator narrowed the inbox to; every field is optional (None = any)."""

    status: str | None = "pending"  # one of STATUSES, or None for every status
    kind: str | None = None
    risk_level: str | None = None
    action_type: str | None = None
    agent_id: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    expires_after: datetime | None = None
    expires_before: datetime | None = None
    sort: str = SORT_EXPIRY


@dataclass(frozen=True)
class BoundedCount:
    """A count that stops at :data:`COUNT_CAP` + 1 rows: ``at_least`` says it was cut."""

    value: int
    at_least: bool = False

    def __str__(self) -> str:
        return f"{self.value}+" if self.at_least else str(self.value)


@dataclass(frozen=True)
class InboxPage:
    decisions: list[Decision]
    page: int
    per_page: int
    has_next: bool
    total: BoundedCount  # rows matching the filters

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def first_index(self) -> int:
        return (self.page - 1) * self.per_page + 1 if self.decisions else 0

    @property
    def last_index(self) -> int:
        return (self.page - 1) * self.per_page + len(self.decisions)


def effective_status(item: ApprovalItem, now: datetime | None = None) -> str:
    now = now or timezone.now()
    # An unswept item past its expiry is already undecidable; show it as expired.
    if item.status == ApprovalItem.Status.PENDING and item.expires_at <= now:
        return ApprovalItem.Status.EXPIRED
    return item.status


def _bounded(queryset: QuerySet) -> BoundedCount:
    """``count(*)`` over at most COUNT_CAP + 1 rows (a LIMIT inside the subquery)."""
    n = queryset.order_by().values("pk")[: COUNT_CAP + 1].count()
    return BoundedCount(min(n, COUNT_CAP), at_least=n > COUNT_CAP)


def _add(a: BoundedCount, b: BoundedCount) -> BoundedCount:
    return BoundedCount(a.value + b.value, at_least=a.at_least or b.at_least)


def status_counts(*, company: Company, now: datetime | None = None) -> dict[str, BoundedCount]:
    """Per effective status over every kind and risk, each a bounded count over a
    (company, status, …) index."""
    now = now or timezone.now()
    items = ApprovalItem.objects.filter(company=company)
    requests = WriteAccessRequest.objects.filter(company=company)
    return {
        "pending": _add(
            _bounded(items.filter(status="pending", expires_at__gt=now)),
            _bounded(requests.filter(status="pending")),
        ),
        "approved": _add(
            _bounded(items.filter(status="approved")), _bounded(requests.filter(status="approved"))
        ),
        "rejected": _add(
            _bounded(items.filter(status="rejected")), _bounded(requests.filter(status="rejected"))
        ),
        # an unswept pending item past its expiry is shown (and counted) as expired
        "expired": _bounded(
            items.filter(Q(status="expired") | Q(status="pending", expires_at__lte=now))
        ),
    }


def busiest_company(companies: list[Company], *, now: datetime | None = None) -> Company | None:
    """Of ``companies``, the one with the most pending decisions (ties: the first listed);
    ``None`` when none has any. Where a member of several companies lands in the console."""
    now = now or timezone.now()
    best, best_count = None, 0
    for company in companies:
        pending = status_counts(company=company, now=now)["pending"].value
        if pending > best_count:
            best, best_count = company, pending
    return best


_ACTION_TYPES_SQL = """
WITH RECURSIVE t(a) AS (
    SELECT min(action_type) FROM orgmemory_approvalitem WHERE company_id = %s
  UNION ALL
    SELECT (SELECT min(action_type) FROM orgmemory_approvalitem
            WHERE company_id = %s AND action_type > t.a)
    FROM t WHERE t.a IS NOT NULL
)
SELECT a FROM t WHERE a IS NOT NULL
"""


def action_types(*, company: Company) -> list[str]:
    """Every action type the company has items of (plus the write requests' own), found by
    a skip scan over the (company, action_type, …) index: one probe per distinct type,
    never a read of every item."""
    with connection.cursor() as cursor:
        cursor.execute(_ACTION_TYPES_SQL, [company.pk, company.pk])
        found = {row[0] for row in cursor.fetchall()}
    return sorted(found | {WRITE_REQUEST_ACTION})


_RISK_RANK = Case(
    *(When(risk_level=risk, then=Value(rank)) for rank, risk in enumerate(RISKS)),
    output_field=IntegerField(),
)
_COLUMNS = (
    "kind",
    "sid",
    "action",
    "heading",
    "risk",
    "risk_rank",
    "state",
    "requester_label",
    "created_at",
    "expires_at",
    "decided_at",
    "decider",
)


def _items(company: Company, f: InboxFilters, now: datetime) -> QuerySet[ApprovalItem]:
    items = ApprovalItem.objects.filter(company=company)
    if f.status == "pending":
        items = items.filter(status="pending", expires_at__gt=now)
    elif f.status == "expired":
        items = items.filter(Q(status="expired") | Q(status="pending", expires_at__lte=now))
    elif f.status:
        items = items.filter(status=f.status)
    if f.risk_level:
        items = items.filter(risk_level=f.risk_level)
    if f.action_type:
        items = items.filter(action_type=f.action_type)
    if f.agent_id is not None:
        items = items.filter(requester_agent_id=f.agent_id)
    if f.created_after:
        items = items.filter(created_at__gte=f.created_after)
    if f.created_before:
        items = items.filter(created_at__lt=f.created_before)
    if f.expires_after:
        items = items.filter(expires_at__gte=f.expires_after)
    if f.expires_before:
        items = items.filter(expires_at__lt=f.expires_before)
    return items


def _item_rows(items: QuerySet[ApprovalItem], now: datetime) -> QuerySet:
    state = Case(
        When(status="pending", expires_at__lte=now, then=Value("expired")),
        default=F("status"),
        output_field=CharField(),
    )
    return (
        items.order_by()
        .annotate(
            kind=Value(KIND_APPROVAL, output_field=CharField()),
            sid=Cast("id", output_field=CharField()),
            action=F("action_type"),
            heading=F("title"),
            risk=F("risk_level"),
            risk_rank=_RISK_RANK,
            state=state,
            requester_label=F("requested_by"),
            decider=F("decided_by__username"),
        )
        .values_list(*_COLUMNS)
    )


def _requests(company: Company, f: InboxFilters) -> QuerySet[WriteAccessRequest] | None:
    # A write request has a fixed risk and action, and never expires.
    if f.risk_level and f.risk_level != WRITE_REQUEST_RISK:
        return None
    if f.action_type and f.action_type != WRITE_REQUEST_ACTION:
        return None
    if f.status == "expired" or f.expires_after or f.expires_before:
        return None
    requests = WriteAccessRequest.objects.filter(company=company)
    if f.status:
        requests = requests.filter(status=f.status)
    if f.agent_id is not None:
        requests = requests.filter(requester_id=f.agent_id)
    if f.created_after:
        requests = requests.filter(created_at__gte=f.created_after)
    if f.created_before:
        requests = requests.filter(created_at__lt=f.created_before)
    return requests


def _request_rows(requests: QuerySet[WriteAccessRequest]) -> QuerySet:
    return (
        requests.order_by()
        .annotate(
            kind=Value(KIND_WRITE_REQUEST, output_field=CharField()),
            sid=Cast("id", output_field=CharField()),
            action=Value(WRITE_REQUEST_ACTION, output_field=CharField()),
            heading=Concat(
                Value("Write "),
                F("category"),
                Value(": "),
                Substr("content", 1, 80),
                output_field=CharField(),
            ),
            risk=Value(WRITE_REQUEST_RISK, output_field=CharField()),
            risk_rank=Value(RISKS.index(WRITE_REQUEST_RISK), output_field=IntegerField()),
            state=F("status"),
            requester_label=F("requester__name"),
            expires_at=Value(None, output_field=DateTimeField()),
            decider=F("decided_by__username"),
        )
        .values_list(*_COLUMNS)
    )


def _ordering(sort: str) -> list:
    expiry = F("expires_at").asc(nulls_last=True)
    risk = F("risk_rank").desc()
    if sort == SORT_RISK:
        return [risk, expiry, F("created_at").asc(), F("sid").asc()]
    if sort == SORT_NEWEST:
        return [F("created_at").desc(), F("sid").desc()]
    if sort == SORT_OLDEST:
        return [F("created_at").asc(), F("sid").asc()]
    # closest to expiry first (a write request never expires: last), then the riskiest
    return [expiry, risk, F("created_at").asc(), F("sid").asc()]


def inbox_page(
    *,
    company: Company,
    filters: InboxFilters = InboxFilters(),
    page: int = 1,
    per_page: int = PAGE_SIZE,
    now: datetime | None = None,
) -> InboxPage:
    """One page of everything humans decide in ``company``, both kinds merged in SQL
    (``UNION ALL`` ordered by :func:`_ordering`, offset pagination).

    By default pending items closest to expiry come first and, at equal expiry, the riskiest;
    write requests (which never expire) come last. Counts are bounded (:data:`COUNT_CAP`) so
    a page costs the same at 100 000 items as at 100.
    """
    now = now or timezone.now()
    page = max(1, page)
    matching: list[QuerySet] = []
    parts: list[QuerySet] = []
    if filters.kind in (None, KIND_APPROVAL):
        items = _items(company, filters, now)
        matching.append(items)
        parts.append(_item_rows(items, now))
    if filters.kind in (None, KIND_WRITE_REQUEST):
        requests = _requests(company, filters)
        if requests is not None:
            matching.append(requests)
            parts.append(_request_rows(requests))
    decisions: list[Decision] = []
    has_next = False
    total = BoundedCount(0)
    if parts:
        combined = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
        offset = (page - 1) * per_page
        rows = list(combined.order_by(*_ordering(filters.sort))[offset : offset + per_page + 1])
        has_next = len(rows) > per_page
        decisions = [_decision(row) for row in rows[:per_page]]
        for queryset in matching:
            total = _add(total, _bounded(queryset))
    return InboxPage(
        decisions=decisions,
        page=page,
        per_page=per_page,
        has_next=has_next,
        total=total,
    )


def _decision(row: tuple) -> Decision:
    values = dict(zip(_COLUMNS, row, strict=True))
    return Decision(
        kind=values["kind"],
        id=values["sid"],
        action_type=values["action"],
        title=values["heading"],
        risk_level=values["risk"],
        status=values["state"],
        requested_by=values["requester_label"],
        created_at=values["created_at"],
        expires_at=values["expires_at"],
        decided_at=values["decided_at"],
        decided_by=values["decider"],
    )


def webhook_failures(*, company: Company, limit: int = 20) -> list[WebhookDelivery]:
    """Deliveries that failed for good or are retrying after an error, newest first."""
    return list(
        WebhookDelivery.objects.filter(company=company)
        .exclude(reason="")
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
