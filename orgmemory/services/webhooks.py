"""Approval webhooks: a signed JSON POST to the company's endpoint, delivered by q2.

The request that changed the item only writes a ``WebhookDelivery`` row (same transaction)
and enqueues the delivery on commit, so a slow or dead endpoint never blocks or fails it.
The body is signed with HMAC-SHA256 over the exact bytes sent, using the company's secret:
``X-SynthOrg-Signature: sha256=<hex>``; receivers recompute it over the raw body.
A failed attempt (network error, non-2xx) is recorded and retried with backoff
(30 s, 2 min, 8 min, 32 min) up to ``MAX_ATTEMPTS``; then the delivery is ``failed`` and the
console shows it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import httpx
from django.db import transaction
from django.utils import timezone

from orgmemory.approval_models import ApprovalItem, ApprovalWebhook, WebhookDelivery

if TYPE_CHECKING:
    from persistence.models import Company

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-SynthOrg-Signature"
EVENT_HEADER = "X-SynthOrg-Event"
DELIVERY_HEADER = "X-SynthOrg-Delivery"
MAX_ATTEMPTS = 5
TIMEOUT_SECONDS = 5.0
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


def webhook_configure(
    *, company: Company, url: str, secret: str, enabled: bool = True
) -> ApprovalWebhook:
    """Create or replace the company's webhook (admin and console call this)."""
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
    delivery = WebhookDelivery.objects.create(
        company_id=item.company_id,
        item=item,
        event=event,
        url=webhook.url,
        payload=item_payload(item, event),
        created_at=timezone.now(),
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


def webhook_deliver(*, delivery_id, client: httpx.Client | None = None) -> WebhookDelivery | None:
    """Attempt one delivery; on failure record it and schedule the next attempt."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
            .first()
        )
        if delivery is None:  # delivered, given up, or another worker holds it
            return None
        webhook = ApprovalWebhook.objects.filter(company_id=delivery.company_id).first()
        body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: str(delivery.pk),
        }
        if webhook is not None:
            headers[SIGNATURE_HEADER] = sign(webhook.secret, body)
        now = timezone.now()
        delivery.attempts += 1
        delivery.last_attempt_at = now
        error, status = "", None
        if webhook is None or not webhook.enabled:
            error = "The company's webhook was removed or disabled."
        else:
            try:
                response = (client or httpx).post(
                    delivery.url, content=body, headers=headers, timeout=TIMEOUT_SECONDS
                )
                status = response.status_code
                if not 200 <= status < 300:
                    error = f"HTTP {status}: {response.text[:200]}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"[:500]
        delivery.response_status = status
        delivery.last_error = error
        retry_at = None
        if not error:
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at = now
        elif delivery.attempts >= MAX_ATTEMPTS or webhook is None or not webhook.enabled:
            delivery.status = WebhookDelivery.Status.FAILED
            logger.warning("webhook delivery %s failed for good: %s", delivery.pk, error)
        else:
            retry_at = now + retry_delay(delivery.attempts)
            logger.warning(
                "webhook delivery %s attempt %d failed (%s); retrying at %s",
                delivery.pk,
                delivery.attempts,
                error,
                retry_at.isoformat(),
            )
        delivery.save()
    if retry_at is not None:
        _enqueue(delivery.pk, at=retry_at)
    return delivery
