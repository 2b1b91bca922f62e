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
