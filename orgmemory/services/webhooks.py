"""Company webhooks: a signed JSON POST to the company's endpoint, delivered by q2.

One endpoint per company (:class:`~orgmemory.approval_models.ApprovalWebhook`) receives the
events it subscribes to (``events``): the approval queue's (``approval.pending``,
``approval.approved``, ``approval.rejected``, ``approval.expired``, ``approval.decided``) and
the memory events the memory services record through :func:`webhook_events_record`
(``memory.created`` … ``lesson.created``; docs/agents/events.md). Memory and lesson text is
in a payload only when the company opted in (``include_content``).

The request that changed the item only writes a ``WebhookDelivery`` row (same transaction)
and enqueues the delivery on commit, so a slow or dead endpoint never blocks or fails it.
The body is signed with HMAC-SHA256 over the exact bytes sent, using the company's secret:
``X-SynthOrg-Signature: sha256=<hex>``; receivers recompute it over the raw body.

Each attempt reads the company's webhook **as it is when the attempt is sent**: a URL or
secret an admin changed meanwhile counts from the next attempt (``delivery.url`` records
where the last one went), and a delivery whose webhook was removed or disabled stops
(``failed``, "The company's webhook was removed or disabled.").

A delivery is a durable job (:mod:`synthorg.jobs`, the kind :data:`WEBHOOK_JOB`, which takes
no LLM slot): an attempt is claimed under a lease (``pending`` → ``sending``), the HTTP call
holds no row lock and no transaction, and a failed attempt (network error, non-2xx) is
retried by :data:`WEBHOOK_POLICY` (30 s, 2 min, 8 min, 32 min) up to ``MAX_ATTEMPTS``; then
the delivery is ``failed``, listed in the console (the inbox and the failures page, where an
operator can re-queue it). A retry is enqueued for its time; the ``jobs-orgmemory.webhook``
schedule (every minute) reclaims attempts whose worker died (their lease passed) and hands
every company with deliveries overdue by ``SWEEP_GRACE`` (a lost enqueue) its own task, so
one company's dead receiver holds up only that company's task. A slow endpoint ties up one
worker for at most ``TOTAL_SECONDS``.

Webhook URLs are set by company admins only and go through the outbound guard
(:mod:`synthorg.outbound`): checked when configured and again, on every resolved address,
when each attempt connects. A delivery records the status and the time of each attempt,
never the answer's body or the connection error's text: every member sees the record, and
a body or an error message would make the webhook a reader and port scanner of whatever
network the server sits in (operators find the details in the worker's log).

The delivery row is the job's latest state. Each attempt's outcome is also written, in the
same transaction as that state, to the append-only ``WebhookDeliveryAttempt`` (attempt
number, status code or failure kind, duration in ms), and each transition to the
append-only ``WebhookDeliveryStatusChange``.
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
from django.db import connections, router, transaction
from django.urls import reverse
from django.utils import timezone

from orgmemory.approval_models import (
    WEBHOOK_EVENTS,
    ApprovalItem,
    ApprovalWebhook,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookDeliveryStatusChange,
)
from persistence.access import UPDATE, require_write
from synthorg.db.prepared import execute_prepared
from synthorg.errors import InvalidInputError
from synthorg.jobs.history import history_writer
from synthorg.jobs.policy import RetryPolicy
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import LeaseLost, job_claim, job_fail, job_finish
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
UNKNOWN_EVENTS = "Unknown webhook event(s): {events}. Known events: {known}."
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
#: 30 s × 4^(attempts − 1): 30 s, 2 min, 8 min, 32 min; five attempts
WEBHOOK_POLICY = RetryPolicy(
    base=timedelta(seconds=30), factor=4, max_delay=timedelta(hours=1), max_attempts=5
)
MAX_ATTEMPTS = WEBHOOK_POLICY.max_attempts
TASK = "orgmemory.tasks.deliver_webhook"
RECLAIMED = (
    "reclaimed: the worker sending this delivery did not finish within its lease ({seconds} s)"
)
_Status = WebhookDelivery.Status


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


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


def webhook_events_check(events) -> list[str]:
    """``events`` as a sorted list without repeats, if every one is known; else
    ``InvalidInputError`` (``unknown_webhook_event``) naming the unknown ones."""
    unknown = sorted({str(e) for e in events} - set(WEBHOOK_EVENTS))
    if unknown:
        message = UNKNOWN_EVENTS.format(events=", ".join(unknown), known=", ".join(WEBHOOK_EVENTS))
        raise InvalidInputError(
            message,
            code="unknown_webhook_event",
            errors=[{"field": "events", "message": message, "code": "unknown_webhook_event"}],
        )
    return sorted(set(events), key=WEBHOOK_EVENTS.index)


def webhook_configure(
    *,
    company: Company,
    url: str,
    secret: str,
    enabled: bool = True,
    events=None,
    include_content: bool | None = None,
    principal: Principal | None,
) -> ApprovalWebhook:
    """Create or replace the company's webhook. Company admins only (``principal``; ``None``
    is the server itself, e.g. a management command); the URL must pass the outbound guard.

    ``events`` (the events it receives) and ``include_content`` (memory and lesson text in
    the payloads) keep their stored values when ``None``; a new webhook starts with the
    approval queue's four events and without content."""
    if principal is not None:
        require_write(principal, "approval_webhook", UPDATE)
    webhook_url_check(url)
    defaults: dict = {"url": url, "secret": secret, "enabled": enabled}
    if events is not None:
        defaults["events"] = webhook_events_check(events)
    if include_content is not None:
        defaults["include_content"] = include_content
    webhook, _ = ApprovalWebhook.objects.update_or_create(
        company=company, defaults={**defaults, "updated_at": timezone.now()}
    )
    return webhook


_SUBSCRIBED_SQL = (
    f'SELECT 1 FROM "{ApprovalWebhook._meta.db_table}" '
    "WHERE company_id = %s AND enabled AND %s::varchar = ANY(events)"
)


def webhook_for_event(*, company_id: int, event: str) -> ApprovalWebhook | None:
    """The company's enabled webhook when it subscribes to ``event``, else ``None``.

    Every memory write asks, and most companies have no webhook: the question is first a
    prepared statement of the connection the ORM would read on (no ORM query to build per
    write), and only a company that subscribes loads its webhook."""
    alias = router.db_for_read(ApprovalWebhook)
    if not execute_prepared(connections[alias], _SUBSCRIBED_SQL, [company_id, event]):
        return None
    return (
        ApprovalWebhook.objects.using(alias)
        .filter(company_id=company_id, enabled=True, events__contains=[event])
        .first()
    )


def event_envelope(*, company: Company, event: str, occurred_at: datetime, **body) -> dict:
    """The members every event payload starts with, then the event's own ``body``."""
    return {"event": event, "company": company.slug, "occurred_at": occurred_at.isoformat(), **body}


def webhook_events_record(
    *, webhook: ApprovalWebhook, event: str, payloads: list[dict], now: datetime | None = None
) -> list[WebhookDelivery]:
    """Record one delivery per payload of ``event`` for ``webhook`` (in the caller's
    transaction, so a rolled-back write sends nothing) and enqueue them once it commits: the
    write never waits for, nor fails with, the endpoint."""
    if not payloads:
        return []
    now = now or timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            company_id=webhook.company_id,
            item=None,
            event=event,
            url=webhook.url,
            payload=payload,
            created_at=now,
            updated_at=now,
            next_attempt_at=now,
        )
        for payload in payloads
    )
    ids = [d.pk for d in deliveries]
    transaction.on_commit(lambda: [_enqueue(pk) for pk in ids])
    return deliveries


def webhook_enqueue(*, item: ApprovalItem, event: str) -> WebhookDelivery | None:
    """Record a delivery for ``item``'s ``event`` and enqueue it once the transaction commits.

    Does nothing when the company has no enabled webhook subscribed to ``event``.
    """
    webhook = webhook_for_event(company_id=item.company_id, event=event)
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
        updated_at=now,
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
    """Attempt one delivery (the task enqueued on commit and at each retry's time); ``None``
    when it is not pending (delivered, given up, or another worker's attempt is in flight).

    The attempt is claimed with a lease (``CLAIM_LEASE``) in a short transaction, the HTTP
    call runs outside any transaction (no row lock or connection held across it), and the
    outcome is recorded in another short transaction. A worker that dies mid-call leaves the
    lease to expire; the sweep then reclaims and retries it.
    """
    now = timezone.now()
    delivery = job_claim(WEBHOOK_JOB, delivery_id, now=now)
    if delivery is None:
        return None
    _attempt(delivery, now=now, client=client)
    return delivery


def webhook_job_run(delivery: WebhookDelivery, batch=None) -> bool:
    """The job kind's ``run``: one claimed attempt. ``False`` when the endpoint failed, so
    the rest of the company's due deliveries (same endpoint) wait for the next sweep."""
    return _attempt(delivery, now=delivery.updated_at, client=None)


def _attempt(delivery: WebhookDelivery, *, now: datetime, client: httpx.Client | None) -> bool:
    """POST the claimed ``delivery`` to the company's webhook as it is now and record the
    outcome; ``False`` when the endpoint failed (a removed webhook is no endpoint failure)."""
    webhook = ApprovalWebhook.objects.filter(company_id=delivery.company_id, enabled=True).first()
    error, status = "", None
    started = time.monotonic()
    if webhook is None:
        error = FAILED_DISABLED
    else:
        delivery.url = webhook.url
        body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: str(delivery.pk),
            SIGNATURE_HEADER: sign(webhook.secret, body),
        }
        status, error = _post(webhook.url, body, headers, client)
    duration_ms = round((time.monotonic() - started) * 1000)
    fields = {"response_status": status, "last_attempt_at": now}
    retry_at = None
    try:
        with transaction.atomic():
            if not error:
                job_finish(
                    WEBHOOK_JOB,
                    delivery,
                    status=_Status.DELIVERED,
                    now=now,
                    delivered_at=now,
                    **fields,
                )
            elif webhook is None:
                job_finish(
                    WEBHOOK_JOB, delivery, status=_Status.FAILED, reason=error, now=now, **fields
                )
            elif job_fail(
                WEBHOOK_JOB,
                delivery,
                now=now,
                status=_Status.PENDING,
                gave_up_status=_Status.FAILED,
                reason=error,
                **fields,
            ):
                retry_at = delivery.next_attempt_at
            WebhookDeliveryAttempt.objects.create(
                company_id=delivery.company_id,
                delivery=delivery,
                attempt=delivery.attempts,
                status_code=status,
                failure=_failure_kind(status, error),
                duration_ms=duration_ms,
                created_at=now,
            )
    except LeaseLost:  # the lease passed and the delivery was reclaimed: its retry records
        logger.warning("webhook delivery %s lost its lease", delivery.pk)
        return True
    if retry_at is not None:
        logger.warning(
            "webhook delivery %s attempt %d failed (%s); retrying at %s",
            delivery.pk,
            delivery.attempts,
            error,
            retry_at.isoformat(),
        )
        _enqueue(delivery.pk, at=retry_at)
    elif error:
        logger.warning("webhook delivery %s failed for good: %s", delivery.pk, error)
    return not error or webhook is None


def _failure_kind(status: int | None, error: str) -> str:
    """The attempt record's ``failure``: "" when delivered, else what kind of failure."""
    if not error:
        return _Failure.NONE
    if error in _FAILURE_KINDS:
        return _FAILURE_KINDS[error]
    return _Failure.HTTP_STATUS


#: appends the delivery's status to its history (``webhook_history_record(delivery, now=…)``)
webhook_history_record = history_writer(WebhookDeliveryStatusChange, "delivery")


def _due(cutoff: datetime):
    return WebhookDelivery.objects.filter(status=_Status.PENDING, next_attempt_at__lte=cutoff)


def _describe(delivery: WebhookDelivery) -> str:
    if delivery.item_id is not None:
        return f"{delivery.event}: {delivery.item.title}"
    subject = delivery.payload.get("memory") or delivery.payload.get("lesson") or {}
    return f"{delivery.event}: {subject.get('id', '')}"


def _detail_url(delivery: WebhookDelivery) -> str:
    if delivery.item_id is not None:
        return reverse("approvals_console:item", args=[delivery.item_id])
    return reverse("admin:orgmemory_webhookdelivery_change", args=[delivery.pk])


WEBHOOK_JOB = JobKind(
    name="orgmemory.webhook",
    model=WebhookDelivery,
    history=webhook_history_record,
    run=webhook_job_run,
    queued=_Status.PENDING,
    running=_Status.SENDING,
    policy=WEBHOOK_POLICY,
    lease=lambda: CLAIM_LEASE,
    due=_due,
    batch_size=SWEEP_BATCH,
    reclaimed_reason=RECLAIMED,
    llm_slots=False,
    grace=SWEEP_GRACE,
    label="Webhook delivery",
    failed_statuses=(_Status.FAILED,),
    describe=_describe,
    detail_url=_detail_url,
    target_type="webhook_delivery",
    enqueue=_enqueue,
)
