"""Memory events: what the memory services tell a company's webhook (docs/agents/events.md).

Every write that creates, changes, archives, restores or deletes a memory calls
:func:`memory_events_record` from the service that does it — the one write path REST, the
tools, MCP, the console, the admin and the background tasks share — inside the write's own
transaction. When the company's enabled webhook subscribes to the event, one
``WebhookDelivery`` per memory is written there and enqueued on commit
(:func:`orgmemory.services.webhooks.webhook_events_record`): a rolled-back write sends
nothing, and a dead endpoint never blocks or fails the write. When it does not subscribe,
the cost is one indexed read.

A payload names the memory (ids, agent, namespace, category, level, timestamps) and carries
its text (``content``, ``context``, ``tags``) only when the company opted in
(``include_content``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from uuid import UUID

from django.utils import timezone

from memory.core.models.memory import Memory
from orgmemory.services.webhooks import event_envelope, webhook_events_record, webhook_for_event
from persistence.models import Agent

MEMORY_CREATED = "memory.created"
MEMORY_UPDATED = "memory.updated"
MEMORY_ARCHIVED = "memory.archived"
MEMORY_RESTORED = "memory.restored"
MEMORY_DELETED = "memory.deleted"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def agent_names(agent_ids: Iterable[int]) -> dict[int, str]:
    """The names of ``agent_ids`` in one query (a payload names its agent)."""
    return dict(Agent.objects.filter(pk__in=set(agent_ids)).values_list("pk", "name"))


def memory_snapshot(memory: Memory, *, agent_name: str, include_content: bool) -> dict:
    """What a payload says of ``memory``: no text unless ``include_content``."""
    data = {
        "id": str(memory.pk),
        "agent": {"id": memory.agent_id, "name": agent_name},
        "namespace": memory.namespace,
        "category": memory.category,
        "level": memory.level,
        "is_shared": memory.is_shared,
        "confidence": memory.confidence,
        "created_at": _iso(memory.created_at),
        "updated_at": _iso(memory.updated_at),
        "expires_at": _iso(memory.expires_at),
    }
    if include_content:
        data.update(content=memory.content, context=memory.context, tags=list(memory.tags))
    return data


def memory_events_record(
    *,
    company_id: int,
    event: str,
    memories: Sequence[Memory] | None = None,
    memory_ids: Sequence[UUID] | None = None,
    extra: Mapping[UUID, dict] | None = None,
    now: datetime | None = None,
) -> int:
    """Record ``event`` for each of ``memories`` (or the live rows of ``memory_ids``, read
    only when the company subscribes) when company ``company_id``'s webhook subscribes to it; each
    payload gets ``extra[memory.pk]``'s members too. Returns how many were recorded."""
    webhook = webhook_for_event(company_id=company_id, event=event)
    if webhook is None:
        return 0
    if memories is None:
        memories = list(Memory.objects.filter(pk__in=list(memory_ids or ())).order_by("id"))
    if not memories:
        return 0
    now = now or timezone.now()
    names = agent_names(m.agent_id for m in memories)
    payloads = [
        event_envelope(
            company=webhook.company,
            event=event,
            occurred_at=now,
            memory=memory_snapshot(
                m, agent_name=names.get(m.agent_id, ""), include_content=webhook.include_content
            ),
            **(extra or {}).get(m.pk, {}),
        )
        for m in memories
    ]
    return len(webhook_events_record(webhook=webhook, event=event, payloads=payloads, now=now))
