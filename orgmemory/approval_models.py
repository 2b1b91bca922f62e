"""The approval queue: every decision a human makes about what agents may do or learn.

``ApprovalItem`` follows the seed's model: an action waiting for a human, with a risk level,
a time to live, first-writer-wins decisions and a reason required to reject. The seed's
validators are database constraints here, so no code path (admin, raw SQL, a future
service) can store an item the seed would reject.

Webhooks notify a company's endpoint when an item becomes pending or is decided; each
notification is a ``WebhookDelivery`` row, so failures stay visible in the console.

The item and delivery rows are mutable queue/state rows (latest state only). Their history
lives in append-only records (Postgres triggers reject UPDATE/DELETE/TRUNCATE, migration
0008), written by the services in the same transaction as the change they record:
``ApprovalDecision`` (each approve, reject or expiry) and ``WebhookDeliveryAttempt`` (each
delivery attempt's outcome: status code or failure kind and duration, never a body).

A ``WebhookDelivery`` is a durable job (:mod:`synthorg.jobs`): ``pending`` is its queued
status, ``sending`` its running one (an attempt in flight, under a lease); every transition
is a ``WebhookDeliveryStatusChange`` row (append-only, with the actor of a re-queue).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q

from persistence.models import Agent, AuditEntry, Company, Task
from synthorg.jobs.models import DurableJob, JobStatusChange

MIN_TTL = timedelta(seconds=60)
MAX_TTL = timedelta(days=7)
RISK_LEVELS = ("low", "medium", "high", "critical")

#: Every event a company's webhook can subscribe to (docs/agents/events.md). The approval
#: queue's own four were the only events before memory events; a webhook created before
#: those existed keeps exactly them (:data:`APPROVAL_EVENTS`, the column's default).
APPROVAL_EVENTS = ("approval.pending", "approval.approved", "approval.rejected", "approval.expired")
MEMORY_EVENTS = (
    "memory.created",
    "memory.updated",
    "memory.archived",
    "memory.restored",
    "memory.deleted",
    "lesson.created",
    "approval.decided",
)
WEBHOOK_EVENTS = APPROVAL_EVENTS + MEMORY_EVENTS


def _default_events() -> list[str]:
    return list(APPROVAL_EVENTS)


class ApprovalItem(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"

    RiskLevel = AuditEntry.RiskLevel  # one risk scale for approvals and the audit trail

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="approval_items")
    action_type = models.CharField(max_length=100)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # Who asked: an agent (``requester_agent`` set) or a system component (the app that
    # files the action type); ``requested_by`` is the display label either way.
    requested_by = models.CharField(max_length=100)
    requester_agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="approval_items"
    )
    risk_level = models.CharField(max_length=16, choices=RiskLevel.choices)
    source = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approval_decisions",
    )
    decision_reason = models.TextField(blank=True, default="")
    task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="approval_items"
    )
    consumed_at = models.DateTimeField(null=True, blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=~Q(action_type__regex=r"^\s*$"), name="approval_action_type_not_blank"
            ),
            models.CheckConstraint(
                condition=~Q(title__regex=r"^\s*$"), name="approval_title_not_blank"
            ),
            models.CheckConstraint(
                condition=~Q(requested_by__regex=r"^\s*$"), name="approval_requester_not_blank"
            ),
            models.CheckConstraint(
                condition=~Q(source__regex=r"^\s*$"), name="approval_source_not_blank"
            ),
            models.CheckConstraint(
                condition=Q(risk_level__in=RISK_LEVELS), name="approval_risk_level_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "rejected", "expired"]),
                name="approval_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gte=F("created_at") + MIN_TTL)
                & Q(expires_at__lte=F("created_at") + MAX_TTL),
                name="approval_ttl_range",
            ),
            # decided_at / decided_by present iff a human decided (approved or rejected)
            models.CheckConstraint(
                condition=(
                    Q(status__in=["approved", "rejected"])
                    & Q(decided_at__isnull=False)
                    & Q(decided_by__isnull=False)
                    & Q(decided_at__gte=F("created_at"))
                )
                | (
                    Q(status__in=["pending", "expired"])
                    & Q(decided_at__isnull=True)
                    & Q(decided_by__isnull=True)
                ),
                name="approval_decided_fields",
            ),
            # a reason iff rejected
            models.CheckConstraint(
                condition=(Q(status="rejected") & ~Q(decision_reason__regex=r"^\s*$"))
                | (~Q(status="rejected") & Q(decision_reason="")),
                name="approval_reason_iff_rejected",
            ),
            # consumed only once approved, and not before the decision
            models.CheckConstraint(
                condition=Q(consumed_at__isnull=True)
                | (Q(status="approved") & Q(consumed_at__gte=F("decided_at"))),
                name="approval_consumed_only_approved",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="approval_company_time"),
            models.Index(
                fields=["company", "status", "-created_at", "-id"], name="approval_status_time"
            ),
            models.Index(
                fields=["expires_at"],
                condition=Q(status="pending"),
                name="approval_pending_expiry",
            ),
            models.Index(
                fields=["company", "action_type", "-created_at"], name="approval_action_type"
            ),
            # the inbox's default order (closest to expiry first), per status and over all
            models.Index(fields=["company", "status", "expires_at"], name="approval_status_expiry"),
            models.Index(fields=["company", "expires_at"], name="approval_company_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.action_type}: {self.title} ({self.status})"


class ApprovalWebhook(models.Model):
    """A company's optional endpoint for its events (signed with ``secret``): the approval
    queue's and the memory events it subscribes to in ``events``. Payloads carry no memory
    or lesson text unless ``include_content``."""

    company = models.OneToOneField(
        Company, on_delete=models.CASCADE, related_name="approval_webhook"
    )
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    events = ArrayField(models.CharField(max_length=40), default=_default_events, blank=True)
    include_content = models.BooleanField(default=False)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(url__regex=r"^https?://"), name="webhook_url_http"),
            models.CheckConstraint(
                condition=~Q(secret__regex=r"^\s*$"), name="webhook_secret_not_blank"
            ),
            models.CheckConstraint(
                condition=Q(events__contained_by=list(WEBHOOK_EVENTS)),
                name="webhook_events_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company}: {self.url}"


class WebhookDeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its (next) attempt
    SENDING = "sending", "Sending"  # an attempt is in flight (``claimed_until`` its lease)
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"  # gave up (or the webhook was removed); can be re-queued


class WebhookDelivery(DurableJob):
    """One notification of one event, with its delivery attempts: an approval item's
    (``item`` set) or a memory event's (``item`` null; the ids are in ``payload``).

    ``url`` is where the last attempt went: each attempt reads the company's webhook as it
    is then (an admin's new URL or secret counts from the next attempt). ``reason`` (the
    column ``last_error``) is the last attempt's failure, a status or a kind, never a body.
    """

    Status = WebhookDeliveryStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(
        Company, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    item = models.ForeignKey(
        ApprovalItem,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="webhook_deliveries",
    )
    event = models.CharField(max_length=40)
    url = models.URLField(max_length=500)
    payload = models.JSONField()
    status = models.CharField(
        max_length=16, choices=WebhookDeliveryStatus.choices, default=WebhookDeliveryStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    reason = models.TextField(db_column="last_error", blank=True, default="")
    method = None  # not LLM work
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "sending", "delivered", "failed"]),
                name="webhook_delivery_status_valid",
            ),
            models.CheckConstraint(
                condition=(Q(status="delivered") & Q(delivered_at__isnull=False))
                | (~Q(status="delivered") & Q(delivered_at__isnull=True)),
                name="webhook_delivered_at_iff_delivered",
            ),
        ]
        indexes = [
            models.Index(
                fields=["company", "status", "-created_at"], name="webhook_company_status"
            ),
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="webhook_delivery_due",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.url} ({self.status})"


class WebhookDeliveryStatusChange(JobStatusChange):
    """One status transition of a delivery (a claim, an attempt's outcome, a reclaim, an
    operator's re-queue). **Append-only** (a Postgres trigger rejects UPDATE/DELETE/TRUNCATE).

    ``WebhookDeliveryAttempt`` stays the record of each attempt (its HTTP status or failure
    kind and duration, one row per attempt number); this is the job's history, which has
    transitions that are no attempt (a claim, a dead worker's reclaim, a re-queue that
    starts the count again)."""

    method = None
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.PROTECT, related_name="status_history"
    )
    status = models.CharField(max_length=16, choices=WebhookDeliveryStatus.choices)

    class Meta:
        ordering = ("delivery", "id")
        indexes = [models.Index(fields=["delivery", "id"], name="webhookhist_delivery")]

    def __str__(self) -> str:
        return f"{self.delivery_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ApprovalDecision(models.Model):
    """One decision on an approval item. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the item row holds the latest state, this the history."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        EXPIRE = "expire", "Expire"

    id = models.BigAutoField(primary_key=True)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    item = models.ForeignKey(ApprovalItem, on_delete=models.PROTECT, related_name="decisions")
    decision = models.CharField(max_length=8, choices=Decision.choices)
    # The human who decided; null for the system (an expiry).
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    #: edit-then-approve: ``{"fields": {name: {"before", "after"}}, "diff": unified diff}``
    edits = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("item", "id")
        indexes = [models.Index(fields=["item", "id"], name="approvaldecision_item")]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=["approve", "reject", "expire"]),
                name="approvaldecision_decision_valid",
            ),
            # a human approves or rejects; only the system expires
            models.CheckConstraint(
                condition=(Q(decision__in=["approve", "reject"]) & Q(actor_user__isnull=False))
                | (Q(decision="expire") & Q(actor_user__isnull=True)),
                name="approvaldecision_actor_matches",
            ),
            models.CheckConstraint(
                condition=(Q(decision="reject") & ~Q(reason__regex=r"^\s*$"))
                | (~Q(decision="reject") & Q(reason="")),
                name="approvaldecision_reason_iff_reject",
            ),
            # only an approval carries the approver's edits
            models.CheckConstraint(
                condition=Q(decision="approve") | Q(edits={}),
                name="approvaldecision_edits_only_approve",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.decision} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class WebhookDeliveryAttempt(models.Model):
    """One attempt of one webhook delivery. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE). Records the answer's status code or the failure's kind and the
    attempt's duration, never a response body or an error's text (see
    ``orgmemory.services.webhooks``)."""

    class Failure(models.TextChoices):
        NONE = "", "None (delivered)"
        HTTP_STATUS = "http_status", "Non-2xx status"
        TIMEOUT = "timeout", "Timed out"
        CONNECT = "connect", "Could not connect"
        REFUSED = "refused", "Refused by the outbound policy"
        WEBHOOK_DISABLED = "webhook_disabled", "Webhook removed or disabled"

    id = models.BigAutoField(primary_key=True)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.PROTECT, related_name="attempt_history"
    )
    attempt = models.PositiveSmallIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    failure = models.CharField(max_length=16, choices=Failure.choices, blank=True, default="")
    duration_ms = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("delivery", "attempt")
        constraints = [
            models.UniqueConstraint(
                fields=["delivery", "attempt"], name="webhookattempt_delivery_attempt_unique"
            ),
            models.CheckConstraint(condition=Q(attempt__gte=1), name="webhookattempt_attempt_pos"),
            models.CheckConstraint(
                condition=Q(
                    failure__in=[
                        "",
                        "http_status",
                        "timeout",
                        "connect",
                        "refused",
                        "webhook_disabled",
                    ]
                ),
                name="webhookattempt_failure_valid",
            ),
            # delivered: a 2xx status; a status failure: its non-2xx status
            models.CheckConstraint(
                condition=(Q(failure="") & Q(status_code__gte=200) & Q(status_code__lt=300))
                | (Q(failure="http_status") & Q(status_code__isnull=False))
                | (
                    Q(failure__in=["timeout", "connect", "refused", "webhook_disabled"])
                    & Q(status_code__isnull=True)
                ),
                name="webhookattempt_status_matches_failure",
            ),
        ]

    def __str__(self) -> str:
        outcome = self.failure or f"HTTP {self.status_code}"
        return f"{self.delivery_id} #{self.attempt}: {outcome}"
