"""Changing and removing memories: update, correct, delete, session end and project close.

Deletions are real deletions (retention of what an agent asked to forget is not ours to
decide). Every write here records an audit entry in the same transaction (never the
content: the ledger is append-only and erasure must be able to forget content). Re-embedding
runs before any row is locked.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memory.core.domain import SESSION_ID_MAX_CHARS, MemoryUpdateRequest
from memory.core.errors import MemoryNotFoundError, MemoryStoreConflictError, MemoryStoreError
from memory.core.models.memory import Memory
from memory.core.models.revision import MemoryRevision
from memory.core.selectors.memories import MEMORY_NOT_FOUND, agent_memory_get
from memory.core.services.chunks import chunking_for, chunks_replace, windows_for
from memory.core.services.embeddings import Embedded, embed_texts
from memory.core.services.events import MEMORY_DELETED, MEMORY_UPDATED, memory_events_record
from memory.core.services.store import session_expiry
from persistence.access import ROLE_RANK
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Project
from persistence.services.audit import audit_record
from synthorg.embedding import Embedder
from synthorg.errors import AccessDeniedError

MEMORY_SUPERSEDED = "The memory is superseded; store a new one instead of changing it."
EXPIRES_IN_PAST = "expires_at must be in the future."
NOTHING_TO_UPDATE = "The request changes nothing; send at least one field."
REASON_REQUIRED = "A reason is required when a person deletes or corrects a memory."
HUMANS_CORRECT = "Only a person corrects a memory this way; agents update their own."
ROLE_TOO_LOW_FOR_MEMORY = "Your role may not change agents' memories (needs operator or higher)."
SESSION_ID_INVALID = f"session_id must be 1 to {SESSION_ID_MAX_CHARS} non-blank characters."


def memory_update(
    *,
    agent: Agent,
    memory_id: UUID | str,
    request: MemoryUpdateRequest,
    principal=None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
) -> Memory:
    """Apply ``request`` to one of ``agent``'s private memories; re-embed when its text changes.

    The embedder runs before the row is locked (a slow embedder holds up no other writer).
    Under the lock the text is checked again: if a concurrent update changed it meanwhile,
    the vector computed for the old text is not used and the memory is stored with
    ``embedding_status="pending"`` (the backfill embeds it), as when the embedder fails.
    The update is audited (``memory.updated``: the changed field names, never the content)
    in the same transaction.
    """
    now = now or timezone.now()
    prepared = _prepare_update(
        agent=agent, memory_id=memory_id, request=request, embedder=embedder, now=now
    )
    with transaction.atomic():
        memory, reembedded = _apply_update(prepared, now=now)
        audit_record(
            company=agent.company,
            principal=principal,
            actor_agent=None if principal is not None else agent,
            action_type=AuditAction.MEMORY_UPDATED,
            target_type="memory",
            target_id=memory.pk,
            details={
                "agent_id": agent.pk,
                "fields": sorted(prepared.changes),
                "reembedded": reembedded,
                "category": memory.category,
            },
        )
        memory_events_record(
            company_id=agent.company_id,
            event=MEMORY_UPDATED,
            memories=[memory],
            extra={memory.pk: {"changed": sorted(prepared.changes)}},
            now=now,
        )
    memory.refresh_from_db(fields=["search_vector", "doc_length"])
    return memory


@dataclass(frozen=True)
class _PreparedUpdate:
    """An update checked and embedded before any lock is taken."""

    memory_id: UUID
    changes: dict[str, Any]
    text: tuple[str, str] | None  # the (content, context) embedded, when the request changes it
    embedded: Embedded | None


def _prepare_update(
    *,
    agent: Agent,
    memory_id: UUID | str,
    request: MemoryUpdateRequest,
    embedder: Embedder | None,
    now: datetime,
) -> _PreparedUpdate:
    changes = request.changes()
    if not changes:
        raise MemoryStoreError(NOTHING_TO_UPDATE, code="empty_update")
    expires_at = changes.get("expires_at")
    if expires_at is not None and expires_at <= now:
        raise MemoryStoreError(
            EXPIRES_IN_PAST,
            code="expires_in_past",
            errors=[{"field": "expires_at", "message": EXPIRES_IN_PAST, "code": "expires_in_past"}],
        )
    current = agent_memory_get(agent=agent, memory_id=memory_id, now=now)
    text = (changes.get("content", current.content), changes.get("context", current.context))
    if text == (current.content, current.context):
        return _PreparedUpdate(memory_id=current.pk, changes=changes, text=None, embedded=None)
    # Every window of the new text (memory.core.chunking), in one embedder call.
    windows = windows_for(*text, chunking_for(agent.company))
    embedded = embed_texts(company=agent.company, texts=windows, embedder=embedder)
    return _PreparedUpdate(memory_id=current.pk, changes=changes, text=text, embedded=embedded)


def _apply_update(prepared: _PreparedUpdate, *, now: datetime) -> tuple[Memory, bool]:
    """Lock the row and apply the changes; returns the memory and whether its text changed."""
    memory = Memory.objects.select_for_update().get(pk=prepared.memory_id)
    if memory.superseded_at is not None:
        raise MemoryStoreConflictError(MEMORY_SUPERSEDED, code="memory_superseded")
    before = (memory.content, memory.context)
    for name, value in prepared.changes.items():
        if name == "category":
            value = value.value
        elif name == "tags":
            value = list(value)
        setattr(memory, name, value)
    text = (memory.content, memory.context)
    windows = None
    if text != before:
        embedded = prepared.embedded
        if (
            embedded is not None
            and embedded.vectors is not None
            and prepared.text == (memory.content, memory.context)
        ):
            windows = list(embedded.vectors)
            memory.embedding = windows[0].tolist()
            memory.embedder_id = embedded.embedder_id
            memory.embedding_status = Memory.EmbeddingStatus.READY
        else:  # embedder failed, or the text changed under us: no vector of another text
            memory.embedding = None
            memory.embedder_id = ""
            memory.embedding_status = Memory.EmbeddingStatus.PENDING
        memory.chunk_count = len(windows) - 1 if windows else 0
    if memory.level == Memory.Level.SESSION and "expires_at" in prepared.changes:
        # ``expires_at: null`` (or a later date) cannot lift a session memory's TTL.
        memory.expires_at = session_expiry(
            memory.company, now=now, requested=prepared.changes["expires_at"]
        )
    memory.updated_at = now
    memory.save()
    if text != before:
        chunks_replace(memory.company_id, [(memory.pk, windows)], memory.embedder_id)
    return memory, text != before


@transaction.atomic
def memory_delete(
    *, agent: Agent, memory_id: UUID | str, principal=None, reason: str = "", via: str = ""
) -> None:
    """Delete one of ``agent``'s private memories, recording who did it (and why).

    A human (operator or above, of the agent's company) must give a ``reason``; tool calls
    must too (their guardrail checks it before calling here).
    """
    reason = _human_reason(agent=agent, principal=principal, reason=reason)
    memory = agent_memory_get(agent=agent, memory_id=memory_id)
    _audit_deletion(
        memory,
        principal=principal,
        agent=agent,
        action_type=AuditAction.MEMORY_DELETED,
        extra=guardrail_details(reason=reason, via=via),
    )
    memory_events_record(company_id=agent.company_id, event=MEMORY_DELETED, memories=[memory])
    memory.delete()


def guardrail_details(*, reason: str = "", via: str = "") -> dict[str, str]:
    """Audit members of a guarded (tool) deletion; empty for a plain REST delete."""
    details = {}
    if reason:
        details["reason"] = reason
    if via:
        details["via"] = via
    return details


def memory_correct(
    *,
    agent: Agent,
    memory_id: UUID | str,
    content: str,
    reason: str,
    principal,
    embedder: Embedder | None = None,
) -> Memory:
    """A human replaces a wrong memory's text (re-embedded), audited with the reason.

    The audit log is append-only and survives erasure, so it records a hash of the old
    text, never the text itself; the text is kept as a :class:`MemoryRevision` of the
    memory (deleted with it), for the correction history.
    """
    reason = _human_reason(agent=agent, principal=principal, reason=reason, required=True)
    now = timezone.now()
    prepared = _prepare_update(
        agent=agent,
        memory_id=memory_id,
        request=MemoryUpdateRequest(content=content),
        embedder=embedder,
        now=now,
    )
    with transaction.atomic():
        before = Memory.objects.select_for_update().get(pk=prepared.memory_id)
        memory, _ = _apply_update(prepared, now=now)
        entry = audit_record(
            company=agent.company,
            principal=principal,
            action_type=AuditAction.MEMORY_CORRECTED,
            target_type="memory",
            target_id=memory.pk,
            details={
                "agent_id": agent.pk,
                "reason": reason,
                "previous_content_sha256": hashlib.sha256(before.content.encode()).hexdigest(),
                "category": memory.category,
            },
        )
        MemoryRevision.objects.create(
            company_id=agent.company_id,
            memory=memory,
            audit_entry=entry,
            previous_content=before.content,
            created_at=now,
        )
        memory_events_record(
            company_id=agent.company_id,
            event=MEMORY_UPDATED,
            memories=[memory],
            extra={memory.pk: {"changed": ["content"]}},
            now=now,
        )
    memory.refresh_from_db(fields=["search_vector", "doc_length"])
    return memory


def _human_reason(*, agent: Agent, principal, reason: str, required: bool = False) -> str:
    reason = (reason or "").strip()
    if principal is None or not principal.is_human:
        if required:
            raise AccessDeniedError(HUMANS_CORRECT, code="humans_only")
        return reason
    if principal.company.pk != agent.company_id:
        raise MemoryNotFoundError(MEMORY_NOT_FOUND)
    if ROLE_RANK.get(principal.role, -1) < ROLE_RANK["operator"]:
        raise AccessDeniedError(ROLE_TOO_LOW_FOR_MEMORY, code="role_insufficient")
    if not reason:
        raise MemoryStoreError(
            REASON_REQUIRED,
            code="reason_required",
            errors=[{"field": "reason", "message": REASON_REQUIRED, "code": "blank"}],
        )
    return reason


def _audit_deletion(
    memory: Memory, *, principal, agent: Agent, action_type: str, extra=None
) -> None:
    audit_record(
        company=memory.company,
        principal=principal,
        actor_agent=None if principal is not None else agent,
        action_type=action_type,
        target_type="memory",
        target_id=memory.pk,
        details={
            "agent_id": memory.agent_id,
            "namespace": memory.namespace,
            "category": memory.category,
            "level": memory.level,
            "is_shared": memory.is_shared,
            **(extra or {}),
        },
    )


_session_end_hooks: list = []


def on_session_ended(hook) -> None:
    """Register ``hook(agent=, session_id=, principal=)``; it runs inside the session-end
    transaction (e.g. ingestion purges the session's conversations)."""
    if hook not in _session_end_hooks:
        _session_end_hooks.append(hook)


@transaction.atomic
def memory_session_end(
    *, agent: Agent, session_id: str, principal=None, reason: str = "", via: str = ""
) -> int:
    """End ``agent``'s session ``session_id``: purge its session-level memories."""
    if not session_id.strip() or len(session_id) > SESSION_ID_MAX_CHARS:
        raise MemoryStoreError(SESSION_ID_INVALID, code="invalid_session_id")
    # Counted: the memories (their chunk rows go with them).
    _, by_model = Memory.objects.filter(
        agent=agent, level=Memory.Level.SESSION, session_id=session_id
    ).delete()
    purged = by_model.get(Memory._meta.label, 0)
    audit_record(
        company=agent.company,
        principal=principal,
        actor_agent=None if principal is not None else agent,
        action_type=AuditAction.MEMORY_SESSION_ENDED,
        target_type="session",
        target_id=session_id[:100],
        details={
            "agent_id": agent.pk,
            "memories_purged": purged,
            **guardrail_details(reason=reason, via=via),
        },
    )
    for hook in _session_end_hooks:
        hook(agent=agent, session_id=session_id, principal=principal)
    return purged


def memory_purge_project(project: Project) -> dict[str, int]:
    """Project close hook: purge the project's project-level memories (runs inside the
    closing transaction; the close's own audit entry records the count)."""
    _, by_model = Memory.objects.filter(project=project, level=Memory.Level.PROJECT).delete()
    return {"memories_purged": by_model.get(Memory._meta.label, 0)}
