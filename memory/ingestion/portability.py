"""Conversation ingestion in the content registry: conversations (their running summaries),
messages, extraction runs (with the facts they proposed), journal entries and dream diary
entries are exported for portability (not importable: they record processing that ran
elsewhere) and erased with the agent's content."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime

from django.db.models import Q

from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRequest,
    DreamRun,
    ExtractionRun,
    JournalEntry,
)
from persistence.content_registry import ContentKind, deleted_counts
from persistence.models import Agent, Company

CHUNK = 500


def _iso(value: datetime | date | None) -> str | None:
    return value.isoformat() if value is not None else None


def _rows(model, company: Company, agent: Agent | None, *order: str, subject: str | None = None):
    rows = model.objects.filter(company=company)
    if agent is not None:
        rows = rows.filter(agent=agent)
    if subject is not None:  # the conversation's end user
        path = "subject" if model is Conversation else "conversation__subject"
        rows = rows.filter(**{path: subject})
    return rows.select_related("agent").order_by(*order).iterator(CHUNK)


def export_conversations(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    for row in _rows(Conversation, company, agent, "created_at", "id", subject=subject):
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "conversation_id": row.external_id,
            "subject": row.subject or None,
            "level": row.level,
            "session_id": row.session_id,
            "summary": row.summary,
            "summary_through_seq": row.summary_through_seq,
            "created_at": _iso(row.created_at),
        }


def export_messages(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    rows = _rows(ConversationMessage, company, agent, "conversation_id", "seq", subject=subject)
    for row in rows:
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "conversation": row.conversation_id,
            "seq": row.seq,
            "role": row.role,
            "name": row.name,
            "content": row.content,
            "created_at": _iso(row.created_at),
        }


def export_runs(
    company: Company, agent: Agent | None, subject: str | None = None
) -> Iterator[dict]:
    for row in _rows(ExtractionRun, company, agent, "created_at", "id", subject=subject):
        yield {
            "id": str(row.pk),
            "agent": row.agent.name,
            "conversation": row.conversation_id,
            "status": row.status,
            "first_seq": row.first_seq,
            "last_seq": row.last_seq,
            "facts": [
                {
                    "content": f.content,
                    "category": f.category,
                    "confidence": f.confidence,
                    "decision": f.decision,
                    "memory_id": str(f.memory_id) if f.memory_id else None,
                }
                for f in row.facts.all()
            ],
            "created_at": _iso(row.created_at),
        }


def export_journal(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(JournalEntry, company, agent, "day", "created_at", "id"):
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "day": _iso(row.day),
            "kind": row.kind,
            "markdown": row.markdown,
            "created_at": _iso(row.created_at),
        }


def export_dreams(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(DreamRun, company, agent, "created_at", "id"):
        yield {
            "id": str(row.pk),
            "agent": row.agent.name,
            "status": row.status,
            "core_memory_id": str(row.core_memory_id) if row.core_memory_id else None,
            "diary": row.diary,
            "created_at": _iso(row.created_at),
        }


def export_dream_requests(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(DreamRequest, company, agent, "requested_at", "id"):
        yield {
            "id": str(row.pk),
            "agent": row.agent.name,
            "status": row.status,
            "via": row.via,
            "method": row.method,
            "run": str(row.run_id) if row.run_id else None,
            "requested_at": _iso(row.requested_at),
        }


def _erase(model):
    label = model._meta.label

    def erase(agent: Agent) -> int:
        return model.objects.filter(agent=agent).delete()[1].get(label, 0)

    return erase


def erase_subject_conversations(
    company: Company, subject: str, agent: Agent | None = None
) -> dict[str, int]:
    """Every agent's (or ``agent``'s) conversations with ``subject``: their messages,
    extraction runs and the facts those proposed (the stored text) go with them."""
    conversations = Conversation.objects.filter(company=company, subject=subject)
    if agent is not None:
        conversations = conversations.filter(agent=agent)
    # The journal entries of their extraction runs hold the facts' text (the run link is
    # SET_NULL, so they would outlive the runs); the dream never read them (dream.py).
    journal = Q(run__conversation__in=conversations)
    for agent_id, external_id in conversations.values_list("agent_id", "external_id"):
        journal |= Q(agent_id=agent_id, conversation_external_id=external_id)
    counts = deleted_counts(
        JournalEntry.objects.filter(company=company, kind=JournalEntry.Kind.EXTRACTION)
        .filter(journal)
        .delete()
    )
    for label, count in deleted_counts(conversations.delete()).items():
        counts[label] = counts.get(label, 0) + count
    return counts


def _kind(name, label, export, model, order, **extra) -> ContentKind:
    return ContentKind(
        name=name,
        label=label,
        export=export,
        erase=_erase(model),
        order=order,
        table=model._meta.db_table,
        **extra,
    )


CONTENT_KINDS = (
    _kind(
        "conversation_message",
        "conversation messages",
        export_messages,
        ConversationMessage,
        60,
        subjected=True,
    ),
    _kind("extraction_run", "extraction runs", export_runs, ExtractionRun, 61, subjected=True),
    _kind("journal_entry", "journal entries", export_journal, JournalEntry, 62),
    _kind("dream_run", "dream diary entries", export_dreams, DreamRun, 63),
    _kind(
        "conversation",
        "conversations",
        export_conversations,
        Conversation,
        64,
        subjected=True,
        erase_subject=erase_subject_conversations,
    ),
    _kind("dream_request", "dream requests", export_dream_requests, DreamRequest, 65),
)
