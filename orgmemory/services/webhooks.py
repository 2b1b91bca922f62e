"""Approval webhooks: a signed JSON POST to the company's endpoint, delivered by q2.

The request that changed the item only writes a ``WebhookDelivery`` row (same transaction)
and enqueues the delivery on commit, so a slow or dead endpoint never blocks or fails it.
The body is signed with HMAC-SHA256 over the exact bytes sent, using the company's secret:
``X-SynthOrg-Signature: sha256=<hex>``; receivers recompute it over the raw body.
A failed attempt (network error, non-2xx) is recorded and retried with backoff
(30 s, 2 min, 8 min, 32 min) up to ``MAX_ATTEMPTS``; then the delivery is ``failed`` and the
console shows it. The HTTP call holds no row lock and no transaction: an attempt is claimed with
a lease, and a sweeper (every minute) retries deliveries whose enqueue was lost or whose worker
died mid-call, so a slow endpoint ties up one worker for at most ``TOTAL_SECONDS``.

Webhook URLs are set by company admins only and go through the outbound guard
(:mod:`synthorg.outbound`): checked when configured and again, on every resolved address,
when each attempt connects. A delivery records the status and the time of each attempt,
never the answer's body or the connection error's text: every member sees the record, and
a body or an error message would make the webhook a reader and port scanner of whatever
network the server sits in (operators find the details in the worker's log).

The delivery row is a mutable queue row (its latest state). Each attempt's outcome is also
written, in the same transaction as that state, to the append-only
``WebhookDeliveryAttempt``: attempt number, status code or failure kind, duration in ms.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import httpx
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from orgmemory.approval_models import (
    ApprovalItem,
    ApprovalWebhook,
    WebhookDelivery,
    WebhookDeliveryAttempt,
)
from persistence.access import UPDATE, require_write
from synthorg.errors import InvalidInputError
from synthorg.outbound import OutboundRefused, UnsafeURLError, check_url, guarded_client

if TYPE_CHECKING:
    from persistence.models import Company
    from persistence.principal import Principal

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-SynthOrg-Signature"
EVENT_HEADER = "X-SynthOrg-Event"
DELIVERY_HEADER = "X-SynthOrg-Delivery"
MAX_ATTEMPTS = 5
TIMEOUT_SECONDS = 5.0  # per phase (connect, write, each read)
TOTAL_SECONDS = 10.0  # the whole answer; a slow-drip endpoint is cut off here
# What a failed attempt records (status and kind only: see the module docstring).
FAILED_STATUS = "HTTP {status}"
FAILED_TIMEOUT = "The endpoint did not answer in time."
FAILED_CONNECT = "The endpoint could not be reached."
FAILED_REFUSED = "The webhook URL is refused by the server's outbound policy."
FAILED_DISABLED = "The company's webhook was removed or disabled."
URL_REFUSED = "The webhook URL {reason}."
_Failure = WebhookDeliveryAttempt.Failure
_FAILURE_KINDS = {
    FAILED_TIMEOUT: _Failure.TIMEOUT,
    FAILED_CONNECT: _Failure.CONNECT,
    FAILED_REFUSED: _Failure.REFUSED,
    FAILED_DISABLED: _Failure.WEBHOOK_DISABLED,
}
#: a worker's lease on one attempt: longer than an attempt can take (3 phases + the body)
CLAIM_LEASE = timedelta(seconds=60)
SWEEP_GRACE = timedelta(seconds=60)
SWEEP_BATCH = 100
BACKOFF_BASE = timedelta(seconds=30)
TASK = "orgmemory.tasks.deliver_webhook"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_delay(attempts: int) -> timedelta:
    """Delay before attempt ``attempts + 1``: 30 s × 4^(attempts − 1)."""
    return BACKOFF_BASE * (4 ** max(attempts - 1, 0))


def item_payload(item: ApprovalItem, event: str) -> dict:
    return {
        "event": event,
        "company": item.company.slug,
        "item": {
            "id": str(item.pk),
            "action_type": item.action_type,
            "title": item.title,
            "risk_level": item.risk_level,
            "source": item.source,
            "status": item.status,
            "requested_by": item.requested_by,
            "created_at": item.created_at.isoformat(),
            "expires_at": item.expires_at.isoformat(),
            "decided_at": item.decided_at.isoformat() if item.decided_at else None,
            "decided_by": item.decided_by.get_username() if item.decided_by_id else None,
            "decision_reason": item.decision_reason,
        },
    }


def webhook_url_check(url: str) -> str:
    """``url`` if the outbound guard accepts it, else ``InvalidInputError`` naming ``url``."""
    try:
        return check_url(url)
    except UnsafeURLError as exc:
        message = URL_REFUSED.format(reason=exc)
        raise InvalidInputError(
            message,
            code="outbound_url_refused",
            errors=[{"field": "url", "message": str(exc), "code": "outbound_url_refused"}],
        ) from None


def webhook_configure(
    *, company: Company, url: str, secret: str, enabled: bool = True, principal: Principal | None
) -> ApprovalWebhook:
    """Create or replace the company's webhook. Company admins only (``principal``; ``None``
    is the server itself, e.g. a management command); the URL must pass the outbound guard."""
    if principal is not None:
        require_write(principal, "approval_webhook", UPDATE)
    webhook_url_check(url)
    webhook, _ = ApprovalWebhook.objects.update_or_create(
        company=company,
        defaults={"url": url, "secret": secret, "enabled": enabled, "updated_at": timezone.now()},
    )
    return webhook


def webhook_enqueue(*, item: ApprovalItem, event: str) -> WebhookDelivery | None:
    """Record a delivery for ``item``'s ``event`` and enqueue it once the transaction commits.

    Does nothing when the company has no enabled webhook.
    """
    webhook = ApprovalWebhook.objects.filter(company_id=item.company_id, enabled=True).first()
    if webhook is None:
        return None
    now = timezone.now()
    delivery = WebhookDelivery.objects.create(
        company_id=item.company_id,
        item=item,
        event=event,
        url=webhook.url,
        payload=item_payload(item, event),
        created_at=now,
        next_attempt_at=now,
    )
    transaction.on_commit(lambda: _enqueue(delivery.pk))
    return delivery


def _enqueue(delivery_id, *, at: datetime | None = None) -> None:
    try:
        if at is None:
            from django_q.tasks import async_task

            async_task(TASK, str(delivery_id), task_name=f"webhook-{delivery_id}"[:100])
        else:
            from django_q.models import Schedule

            Schedule.objects.create(
                name=f"webhook-retry-{delivery_id}-{int(at.timestamp())}"[:100],
                func=TASK,
                args=repr((str(delivery_id),)),
                schedule_type=Schedule.ONCE,
                repeats=1,
                next_run=at,
            )
    except Exception:  # the broker is the same database; never fail the caller over it
        logger.exception("could not enqueue webhook delivery %s", delivery_id)


def _claim(delivery_id, now: datetime) -> WebhookDelivery | None:
    """Take the lease on a pending delivery (a short transaction of its own), or None."""
    claimed = WebhookDelivery.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        pk=delivery_id,
        status=WebhookDelivery.Status.PENDING,
    ).update(claimed_until=now + CLAIM_LEASE, attempts=F("attempts") + 1, last_attempt_at=now)
    if not claimed:  # delivered, given up, or another worker holds the lease
        return None
    return WebhookDelivery.objects.get(pk=delivery_id)


def _post(url: str, body: bytes, headers: dict, client: httpx.Client | None) -> tuple:
    """POST once within ``TIMEOUT_SECONDS`` per phase and ``TOTAL_SECONDS`` overall.

    Returns ``(status, error)``. The answer's body is never read: only its status counts.
    """
    deadline = time.monotonic() + TOTAL_SECONDS
    owned = client is None
    client = client or guarded_client(timeout=TIMEOUT_SECONDS)
    try:
        check_url(url)  # the policy may have changed since the URL was configured
        with client.stream("POST", url, content=body, headers=headers) as response:
            status = response.status_code
            if time.monotonic() > deadline:
                return None, FAILED_TIMEOUT
            if not 200 <= status < 300:
                return status, FAILED_STATUS.format(status=status)
            return status, ""
    except (UnsafeURLError, OutboundRefused) as exc:
        logger.warning("webhook to %s refused by the outbound policy: %s", url, exc)
        return None, FAILED_REFUSED
    except httpx.TimeoutException as exc:
        logger.warning("webhook to %s timed out: %s", url, exc)
        return None, FAILED_TIMEOUT
    except httpx.HTTPError as exc:
        logger.warning("webhook to %s failed: %s: %s", url, type(exc).__name__, exc)
        return None, FAILED_CONNECT
    finally:
        if owned:
            client.close()


def webhook_deliver(*, delivery_id, client: httpx.Client | None = None) -> WebhookDelivery | None:
    """Attempt one delivery; on failure record it and schedule the next attempt.

    The attempt is claimed with a lease (``CLAIM_LEASE``) in a short transaction, the HTTP
    call runs outside any transaction (no row lock or connection held across it), and the
    outcome is recorded in another short transaction. A worker that dies mid-call leaves the
    lease to expire; :func:`webhook_deliver_due` then retries it.
    """
    now = timezone.now()
    delivery = _claim(delivery_id, now)
    if delivery is None:
        return None
    webhook = ApprovalWebhook.objects.filter(company_id=delivery.company_id).first()
    error, status = "", None
    started = time.monotonic()
    if webhook is None or not webhook.enabled:
        error = FAILED_DISABLED
    else:
        body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: str(delivery.pk),
            SIGNATURE_HEADER: sign(webhook.secret, body),
        }
        status, error = _post(delivery.url, body, headers, client)
    duration_ms = round((time.monotonic() - started) * 1000)
    delivery.response_status = status
    delivery.last_error = error
    delivery.claimed_until = None
    retry_at = None
    if not error:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = now
        delivery.next_attempt_at = None
    elif delivery.attempts >= MAX_ATTEMPTS or webhook is None or not webhook.enabled:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
        logger.warning("webhook delivery %s failed for good: %s", delivery.pk, error)
    else:
        retry_at = now + retry_delay(delivery.attempts)
        delivery.next_attempt_at = retry_at
        logger.warning(
            "webhook delivery %s attempt %d failed (%s); retrying at %s",
            delivery.pk,
            delivery.attempts,
            error,
            retry_at.isoformat(),
        )
    with transaction.atomic():
        delivery.save(
            update_fields=[
                "response_status",
                "last_error",
                "claimed_until",
                "status",
                "delivered_at",
                "next_attempt_at",
            ]
        )
        WebhookDeliveryAttempt.objects.create(
            company_id=delivery.company_id,
            delivery=delivery,
            attempt=delivery.attempts,
            status_code=status,
            failure=_failure_kind(status, error),
            duration_ms=duration_ms,
            created_at=now,
        )
    if retry_at is not None:
        _enqueue(delivery.pk, at=retry_at)
    return delivery


def _failure_kind(status: int | None, error: str) -> str:
    """The attempt record's ``failure``: "" when delivered, else what kind of failure."""
    if not error:
        return _Failure.NONE
    if error in _FAILURE_KINDS:
        return _FAILURE_KINDS[error]
    return _Failure.HTTP_STATUS


def webhook_deliver_due(*, limit: int = SWEEP_BATCH, now: datetime | None = None) -> int:
    """Attempt the pending deliveries overdue by ``SWEEP_GRACE`` (a lost enqueue, a dead
    worker's expired lease); a q2 schedule runs it every minute. Returns how many it tried."""
    now = now or timezone.now()
    due = list(
        WebhookDelivery.objects.filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now - SWEEP_GRACE,
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for delivery_id in due:
        webhook_deliver(delivery_id=delivery_id)
    return len(due)
