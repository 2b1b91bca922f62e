"""Conversation data in the content registry (``persistence.content_registry``): exported
with an agent's memories and erased with them. Conversations carry their running summary,
messages their text, extraction runs the facts proposed from them, journal entries and
dream runs what the agent wrote about its day. Exported for the record (not importable:
an import restores memories, from which nothing needs re-extracting)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime

from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRun,
    ExtractionRun,
    JournalEntry,
)
from persistence.content_registry import ContentKind
from persistence.models import Agent, Company

CHUNK = 500


def _json(value):
    return value.isoformat() if isinstance(value, datetime | date) else value


def _rows(model, company: Company, agent: Agent | None, fields: tuple[str, ...]) -> Iterator[dict]:
    rows = model.objects.filter(company=company)
    if agent is not None:
        rows = rows.filter(agent=agent)
    for row in rows.select_related("agent").order_by("pk").iterator(CHUNK):
        record = {"id": str(row.pk), "agent": row.agent.name}
        record.update({name: _json(getattr(row, name)) for name in fields})
        yield record


def _kind(name, label, model, fields, order) -> ContentKind:
    return ContentKind(
        name=name,
        label=label,
        export=lambda company, agent: _rows(model, company, agent, fields),
        erase=lambda agent: model.objects.filter(agent=agent).delete()[0],
        order=order,
        table=model._meta.db_table,
    )


CONTENT_KINDS = (
    # Messages and runs first: erasing a conversation would cascade into them uncounted.
    _kind(
        "conversation_message",
        "conversation messages",
        ConversationMessage,
        ("conversation_id", "seq", "role", "name", "content", "created_at", "received_at"),
        30,
    ),
    _kind(
        "extraction_run",
        "extraction runs",
        ExtractionRun,
        ("conversation_id", "status", "first_seq", "last_seq", "model", "created_at"),
        31,
    ),
    _kind(
        "conversation",
        "conversations",
        Conversation,
        ("external_id", "level", "session_id", "summary", "message_count", "created_at"),
        32,
    ),
    _kind(
        "journal_entry",
        "journal entries",
        JournalEntry,
        ("day", "kind", "conversation_external_id", "markdown", "created_at"),
        33,
    ),
    _kind("dream_run", "dream runs", DreamRun, ("status", "diary", "created_at"), 34),
)
