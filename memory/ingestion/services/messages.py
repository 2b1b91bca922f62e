"""Flushing conversation messages: the durable write every later step reads.

``conversation_messages_append`` stores a batch of messages of one agent's conversation in
one transaction and (re)arms the debounced extraction; it never waits for an LLM. The
agent's ``memory_level`` binds the conversation as it binds memories:

* ``none`` — nothing is stored (``stored=False``, not an error);
* ``session`` — ``session_id`` is required; the conversation is purged when the session ends;
* ``project`` — ``project_id`` of an open project is required; purged when it closes;
* ``persistent`` — kept.

A conversation keeps the binding it started with: a flush naming another session or
project is refused (409), so one conversation's messages never straddle two purges.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError, MemoryStoreConflictError, MemoryStoreError
from memory.core.retrieval.packing import estimate_tokens
from memory.ingestion.domain import (
    CONVERSATION_ID_MAX_CHARS,
    MAX_FLUSH_MESSAGES,
    FlushResult,
    MessageIn,
)
from memory.ingestion.models import Conversation, ConversationMessage, ExtractionRun
from memory.ingestion.scheduling import arm_extraction
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Project
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.enums import MemoryLevel
from synthorg.subjects import SUBJECT_INVALID, subject_problem

FLUSH_EMPTY = "A flush must contain at least one message."
FLUSH_TOO_LARGE = f"A flush holds at most {MAX_FLUSH_MESSAGES} messages."
CONVERSATION_ID_INVALID = (
    f"conversation_id must be 1 to {CONVERSATION_ID_MAX_CHARS} non-blank characters."
)
SESSION_ID_REQUIRED = "This agent's memory level is 'session': session_id is required."
PROJECT_ID_REQUIRED = "This agent's memory level is 'project': project_id is required."
PROJECT_UNKNOWN = "No project with this id exists in the agent's company."
PROJECT_CLOSED = "The project is closed; it no longer accepts messages."
CREATED_IN_FUTURE = "created_at may not be in the future."
BINDING_MISMATCH = (
    "This conversation is bound to another {what}; start a new conversation id for it."
)
CONVERSATION_NOT_FOUND = "No conversation with this id exists for the calling agent."
CONVERSATION_EMPTY = "The conversation has no messages left."
EXTRACTION_RUNNING = (
    "An extraction run is reading this conversation's messages; retry once it has finished "
    "(GET …/extractions shows it running)."
)
# Clients' clocks drift: a created_at this far ahead of ours is still accepted (clamped).
CLOCK_SKEW = timedelta(minutes=5)


def _invalid(message: str, *, code: str, field: str, cls=MemoryStoreError):
    return cls(message, code=code, errors=[{"field": field, "message": message, "code": code}])


def check_conversation_id(conversation_id: str) -> str:
    if not conversation_id or not conversation_id.strip() or len(conversation_id) > 200:
        raise _invalid(
            CONVERSATION_ID_INVALID, code="invalid_conversation_id", field="conversation_id"
        )
    return conversation_id


def conversation_messages_append(
    *,
    agent: Agent,
    conversation_id: str,
    messages: Sequence[MessageIn],
    session_id: str | None = None,
    project_id: int | None = None,
    principal=None,
    now: datetime | None = None,
    subject: str | None = None,
    extract_now: bool = False,
) -> FlushResult:
    """Store ``messages`` (in order) at the end of ``agent``'s conversation ``conversation_id``.

    Creates the conversation on its first flush. Messages get consecutive ``seq`` numbers
    (allocated under the conversation's row lock, so concurrent flushes interleave whole
    batches and never leave gaps). After the commit the debounced extraction is re-armed:
    due ``debounce_seconds`` after this flush, or at once when the unextracted messages
    exceed ``max_pending_tokens``. ``principal`` is accepted for interface symmetry; a flush
    is not audited (the memories extracted from it are, per store batch), purges are.

    ``subject``: the end user the conversation is with (:mod:`synthorg.subjects`), fixed by
    its first flush; a later flush may leave it out, naming another one is a 409
    ``conversation_binding_mismatch``. Memories extracted from it carry it.

    ``extract_now``: queue the extraction at once instead of after the debounce (the
    one-call ``POST /memories/from-messages``), as a flush over ``max_pending_tokens`` does.
    """
    check_conversation_id(conversation_id)
    if subject is not None and subject_problem(subject) is not None:
        raise _invalid(SUBJECT_INVALID, code="subject_invalid", field="subject")
    if not messages:
        raise _invalid(FLUSH_EMPTY, code="flush_empty", field="messages")
    if len(messages) > MAX_FLUSH_MESSAGES:
        raise _invalid(FLUSH_TOO_LARGE, code="flush_too_large", field="messages")
    level = MemoryLevel(agent.memory_level)
    if level is MemoryLevel.NONE:
        return FlushResult(conversation_id=conversation_id, stored=False, accepted=0)
    now = now or timezone.now()
    for index, message in enumerate(messages):
        if message.created_at is not None and message.created_at > now + CLOCK_SKEW:
            raise _invalid(
                CREATED_IN_FUTURE,
                code="created_in_future",
                field=f"messages.{index}.created_at",
            )
    if level is MemoryLevel.SESSION and not (session_id and session_id.strip()):
        raise _invalid(SESSION_ID_REQUIRED, code="session_id_required", field="session_id")
    if level is MemoryLevel.PROJECT and project_id is None:
        raise _invalid(PROJECT_ID_REQUIRED, code="project_id_required", field="project_id")
    config = company_config(agent.company).memory.extraction
    with transaction.atomic():
        project = _lock_project(agent, project_id) if level is MemoryLevel.PROJECT else None
        conversation = _lock_conversation(
            agent,
            conversation_id,
            level=level,
            session_id=session_id if level is MemoryLevel.SESSION else "",
            project=project,
            now=now,
            subject=subject,
        )
        first_seq = conversation.message_count + 1
        rows = []
        tokens = 0
        for offset, message in enumerate(messages):
            count = estimate_tokens(message.content)
            tokens += count
            created_at = message.created_at or now
            rows.append(
                ConversationMessage(
                    company_id=agent.company_id,
                    agent=agent,
                    conversation=conversation,
                    seq=first_seq + offset,
                    role=message.role.value,
                    content=message.content,
                    name=message.name,
                    created_at=min(created_at, now),
                    received_at=now,
                    token_count=count,
                )
            )
        ConversationMessage.objects.bulk_create(rows)
        conversation.message_count += len(rows)
        conversation.pending_tokens += tokens
        conversation.last_message_at = now
        conversation.updated_at = now
        if config.enabled:
            urgent = extract_now or conversation.pending_tokens >= config.max_pending_tokens
            conversation.extraction_due_at = (
                now if urgent else now + timedelta(seconds=config.debounce_seconds)
            )
        conversation.save(
            update_fields=[
                "message_count",
                "pending_tokens",
                "last_message_at",
                "updated_at",
                "extraction_due_at",
            ]
        )
        if config.enabled:
            arm_extraction(conversation, urgent=urgent)
    return FlushResult(
        conversation_id=conversation_id,
        stored=True,
        accepted=len(rows),
        message_ids=tuple(row.pk for row in rows),
        first_seq=first_seq,
        last_seq=conversation.message_count,
        extraction_due_at=conversation.extraction_due_at,
        subject=conversation.subject or None,
    )


def _locked_unclaimed(agent: Agent, conversation_id: str, now: datetime) -> Conversation:
    """``agent``'s conversation, row-locked; refused while an extraction run holds a live
    claim on its messages (the run would otherwise write past a change it did not see)."""
    check_conversation_id(conversation_id)
    conversation = (
        Conversation.objects.select_for_update()
        .filter(company_id=agent.company_id, agent=agent, external_id=conversation_id)
        .first()
    )
    if conversation is None:
        raise MemoryNotFoundError(CONVERSATION_NOT_FOUND, code="conversation_not_found")
    if ExtractionRun.objects.filter(
        conversation=conversation, status=ExtractionRun.Status.RUNNING, claimed_until__gt=now
    ).exists():
        raise MemoryStoreConflictError(EXTRACTION_RUNNING, code="conversation_extraction_running")
    return conversation


@transaction.atomic
def conversation_delete(
    *, agent: Agent, conversation_id: str, principal=None, now: datetime | None = None
) -> int:
    """Delete ``agent``'s conversation ``conversation_id``: its messages, running summary and
    extraction runs (the memories they formed stay: they are the agent's memories). The id
    may be used again; it starts a new conversation. Audited without content. Returns how
    many messages were deleted."""
    now = now or timezone.now()
    conversation = _locked_unclaimed(agent, conversation_id, now)
    messages = conversation.message_count
    _delete_conversations(Conversation.objects.filter(pk=conversation.pk))
    audit_record(
        company=agent.company,
        principal=principal,
        actor_agent=None if principal is not None else agent,
        action_type=AuditAction.CONVERSATION_DELETED,
        target_type="conversation",
        target_id=conversation_id[:100],
        details={"agent_id": agent.pk, "messages_deleted": messages},
    )
    return messages


@transaction.atomic
def conversation_message_pop(
    *, agent: Agent, conversation_id: str, principal=None, now: datetime | None = None
) -> ConversationMessage:
    """Remove the last message of ``agent``'s conversation and return it (unsaved).

    The next flush numbers its first message with the freed ``seq``. How far extraction,
    verbatim storing and the running summary have got is held at the new last message, so
    a message flushed in its place is extracted; memories already formed from the removed
    message stay. ``principal`` is accepted for interface symmetry; like a flush, a pop is
    not audited."""
    now = now or timezone.now()
    conversation = _locked_unclaimed(agent, conversation_id, now)
    last = ConversationMessage.objects.filter(
        conversation=conversation, seq=conversation.message_count
    ).first()
    if last is None:
        raise MemoryNotFoundError(CONVERSATION_EMPTY, code="conversation_empty")
    removed_id = last.pk
    last.delete()
    last.pk = removed_id  # the answer names the message that was removed
    count = conversation.message_count - 1
    conversation.message_count = count
    if last.seq > conversation.extracted_through_seq:
        conversation.pending_tokens = max(0, conversation.pending_tokens - last.token_count)
    conversation.extracted_through_seq = min(conversation.extracted_through_seq, count)
    conversation.verbatim_through_seq = min(conversation.verbatim_through_seq, count)
    conversation.summary_through_seq = min(conversation.summary_through_seq, count)
    if conversation.extracted_through_seq >= count:
        conversation.extraction_due_at = None
    conversation.updated_at = now
    conversation.save(
        update_fields=[
            "message_count",
            "pending_tokens",
            "extracted_through_seq",
            "verbatim_through_seq",
            "summary_through_seq",
            "extraction_due_at",
            "updated_at",
        ]
    )
    return last


def _lock_project(agent: Agent, project_id: int) -> Project:
    # FOR NO KEY UPDATE conflicts with project_close's FOR UPDATE: the project cannot close
    # (and purge) between this check and our commit.
    project = (
        Project.objects.select_for_update(no_key=True)
        .filter(company_id=agent.company_id, pk=project_id)
        .first()
    )
    if project is None:
        raise _invalid(PROJECT_UNKNOWN, code="project_not_found", field="project_id")
    if project.is_closed:
        raise _invalid(
            PROJECT_CLOSED, code="project_closed", field="project_id", cls=MemoryStoreConflictError
        )
    return project


def _lock_conversation(
    agent: Agent,
    external_id: str,
    *,
    level: MemoryLevel,
    session_id: str,
    project: Project | None,
    now: datetime,
    subject: str | None = None,
) -> Conversation:
    locked = Conversation.objects.select_for_update().filter(agent=agent, external_id=external_id)
    conversation = locked.first()
    if conversation is None:
        # First flush: get_or_create is safe against a concurrent first flush (its INSERT
        # runs in a savepoint and falls back to reading the winner's row), then lock it.
        Conversation.objects.get_or_create(
            agent=agent,
            external_id=external_id,
            defaults={
                "company_id": agent.company_id,
                "level": level.value,
                "session_id": session_id,
                "project": project,
                "subject": subject or "",
                "created_at": now,
                "updated_at": now,
            },
        )
        conversation = locked.get()
    if subject is not None and conversation.subject != subject:
        raise _invalid(
            BINDING_MISMATCH.format(what="subject"),
            code="conversation_binding_mismatch",
            field="subject",
            cls=MemoryStoreConflictError,
        )
    if conversation.level != level.value:
        raise _invalid(
            BINDING_MISMATCH.format(what="memory level"),
            code="conversation_binding_mismatch",
            field="conversation_id",
            cls=MemoryStoreConflictError,
        )
    if conversation.session_id != session_id:
        raise _invalid(
            BINDING_MISMATCH.format(what="session"),
            code="conversation_binding_mismatch",
            field="session_id",
            cls=MemoryStoreConflictError,
        )
    if conversation.project_id != (project.pk if project else None):
        raise _invalid(
            BINDING_MISMATCH.format(what="project"),
            code="conversation_binding_mismatch",
            field="project_id",
            cls=MemoryStoreConflictError,
        )
    return conversation


@transaction.atomic
def conversations_purge_session(*, agent: Agent, session_id: str, principal=None) -> int:
    """Delete ``agent``'s conversations bound to ``session_id`` (with their messages)."""
    deleted = _delete_conversations(
        Conversation.objects.filter(agent=agent, level="session", session_id=session_id)
    )
    if deleted:
        audit_record(
            company=agent.company,
            principal=principal,
            actor_agent=None if principal is not None else agent,
            action_type=AuditAction.CONVERSATION_SESSION_PURGED,
            target_type="session",
            target_id=session_id[:100],
            details={"agent_id": agent.pk, "conversations_purged": deleted},
        )
    return deleted


def conversations_purge_project(project: Project) -> dict[str, int]:
    """Project close hook (inside the closing transaction, which audits the counts)."""
    return {
        "conversations_purged": _delete_conversations(
            Conversation.objects.filter(project=project, level="project")
        )
    }


def _delete_conversations(queryset) -> int:
    ids = list(queryset.values_list("pk", flat=True))
    if not ids:
        return 0
    Conversation.objects.filter(pk__in=ids).delete()
    return len(ids)
