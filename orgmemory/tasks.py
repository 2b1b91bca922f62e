"""django-q2 tasks: thin interfaces that call services."""

from orgmemory.services.embeddings import fact_embeddings_backfill


def backfill_fact_embeddings() -> int:
    return fact_embeddings_backfill()


def expire_approval_items() -> int:
    from orgmemory.services.approvals import approval_expire_overdue

    return approval_expire_overdue()


def deliver_webhook(delivery_id: str) -> str | None:
    from orgmemory.services.webhooks import webhook_deliver

    delivery = webhook_deliver(delivery_id=delivery_id)
    return delivery.status if delivery is not None else None


def deliver_due_webhooks() -> int:
    """The sweep: one task per company with overdue deliveries; returns how many companies."""
    from orgmemory.services.webhooks import webhook_deliveries_dispatch

    return len(webhook_deliveries_dispatch().companies)


def deliver_company_webhooks(company_id: int, now=None) -> int:
    """One company's overdue deliveries; returns how many were attempted."""
    from orgmemory.services.webhooks import webhook_deliveries_run_company

    return webhook_deliveries_run_company(company_id=company_id, now=now).retried
