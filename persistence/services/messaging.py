"""Writes for channel messages. A message is sent as the caller; it is never edited."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from persistence.access import owner_for_create
from persistence.models import Message
from persistence.principal import Principal


@transaction.atomic
def message_send(
    *, principal: Principal, channel: str, content: str, metadata: dict | None = None
) -> Message:
    sender = owner_for_create(principal, "message", principal.agent)
    message = Message(
        company=principal.company,
        channel=channel,
        sender_agent=sender,
        sender_user=principal.user,
        content=content,
        metadata=dict(metadata or {}),
        created_at=timezone.now(),
    )
    message.full_clean()
    message.save()
    return message
