"""Writes of the archive: moving memories into it and restoring them.

Everything maintenance removes from the hot store — consolidated originals, memories past
their retention (action ``archive``), expired ones, the oldest beyond the per-agent cap —
leaves through :func:`memories_archive_out`: archived whole, shared entries retracted with
an audit record, then deleted from the hot store, in the caller's transaction. Every archive
row (procedural pruning's too) is written by :func:`archive_memories`, which keeps what the
capabilities registered to keep (a lesson's tiers and counters); a restore gives it back
through the restore handlers.

A restore (:func:`archive_restore`) puts the memory back into the hot store through
``memory_store_batch`` (so it is embedded and searchable again), keeping its original
``created_at``; the archive row stays, marked restored, so a second restore is refused
rather than duplicating the memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from memory.core.consolidation.models import ArchivalEntry, ArchivalMode
from memory.core.domain import CORE_TAG, MemoryStoreRequest
from memory.core.extensions import archive_restore_handlers, archive_snapshots
from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.selectors.archive import ArchiveQuery, archive_get
from memory.core.selectors.memories import shared_knowledge_require
from memory.core.services.events import MEMORY_ARCHIVED, MEMORY_RESTORED, memory_events_record
from memory.core.services.shared import shared_retract_record
from memory.core.services.store import memory_store_batch, memory_store_embed
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Task
from persistence.services.audit import audit_record
from synthorg.embedding import Embedder
from synthorg.enums import MemoryCategory, MemoryLevel
from synthorg.errors import ConflictError, UnprocessableError

ALREADY_RESTORED = "This archived memory has already been restored."
RETRACTED_VIA_MAINTENANCE = "maintenance"
RESTORE_NEEDS_PERSISTENT = (
    "The agent's memory level is {level!r}; archived memories can only be restored for agents "
    "whose memory level is 'persistent'."
)


class ArchivalStore(Protocol):
    """The seed's cold-store protocol."""

    def archive(self, entry: ArchivalEntry) -> UUID: ...

    def search(self, agent_id: int, query: ArchiveQuery) -> tuple[ArchivalEntry, ...]: ...

    def restore(self, agent_id: int, entry_id: UUID) -> ArchivalEntry | None: ...

    def count(self, agent_id: int) -> int: ...


@dataclass(frozen=True)
class ArchiveOutcome:
    archived: list[ArchivedMemory]
    shared_retracted: int


@dataclass
class CapOutcome:
    archived: int = 0
    shared_retracted: int = 0


def memories_enforce_cap(
    *,
    agent: Agent,
    limit: int,
    reason: str,
    now: datetime,
    run: MaintenanceRun | None = None,
    batch_size: int = 500,
) -> CapOutcome:
    """**The one per-agent cap policy** (``max_memories_per_agent``), for maintenance and
    for extraction's bounded growth alike: while ``agent`` holds more than ``limit``
    memories (its private ones and the shared entries it published), the excess leaves
    through :func:`memories_archive_out` — lowest confidence first, then oldest; the live
    core memory never; a shared entry with a retraction on record. Archived whole, so it
    stays restorable."""
    outcome = CapOutcome()
    while True:
        with transaction.atomic():
            held = Memory.objects.filter(company_id=agent.company_id, agent=agent)
            excess = held.count() - limit
            if excess <= 0:
                return outcome
            victims = list(
                held.exclude(tags__contains=[CORE_TAG], superseded_at__isnull=True)
                .select_for_update(skip_locked=True)
                .order_by("confidence", "created_at", "id")[: min(excess, batch_size)]
            )
            if not victims:
                return outcome
            moved = memories_archive_out(
                agent=agent,
                memories=victims,
                mode=ArchivalMode.CAPPED,
                reason=reason,
                run=run,
                now=now,
            )
        outcome.archived += len(moved.archived)
        outcome.shared_retracted += moved.shared_retracted


TASK_ENDED_REASON = "its task ended"


def memories_archive_task(*, task: Task) -> int:
    """Task-end hook (``persistence.services.tasks.on_task_ended``, inside the transaction
    that ends or deletes the task): the working memories scoped to ``task`` leave the hot
    store through :func:`memories_archive_out` (mode ``expired``), restorable by original
    id like any removal. Returns how many."""
    rows = list(
        Memory.objects.select_for_update()
        .filter(company_id=task.company_id, task=task)
        .select_related("agent__company")
        .order_by("agent_id", "created_at", "id")
    )
    by_agent: dict[int, list[Memory]] = {}
    for row in rows:
        by_agent.setdefault(row.agent_id, []).append(row)
    for memories in by_agent.values():
        memories_archive_out(
            agent=memories[0].agent,
            memories=memories,
            mode=ArchivalMode.EXPIRED,
            reason=TASK_ENDED_REASON,
        )
    return len(rows)


def memories_archive_out(
    *,
    agent: Agent,
    memories: Sequence[Memory],
    mode: ArchivalMode,
    reason: str,
    run: MaintenanceRun | None = None,
    summary_memory_id: UUID | None = None,
    now: datetime | None = None,
) -> ArchiveOutcome:
    """Move ``memories`` (rows of ``agent`` the caller has locked) out of the hot store:
    one archive row each (restorable by original id), a ``memory.shared_retracted`` audit
    record for each shared entry (``via: maintenance``, ``reason``), then the delete — all
    in the caller's transaction, so a failure leaves every row where it was."""
    if not memories:
        return ArchiveOutcome(archived=[], shared_retracted=0)
    archived = archive_memories(
        memories=memories,
        modes=dict.fromkeys((m.pk for m in memories), mode),
        summary_memory_id=summary_memory_id,
        run=run,
        now=now,
    )
    by_original = {a.original_id: a for a in archived}
    shared = [m for m in memories if m.is_shared]
    for memory in shared:
        memory.company = agent.company  # no query per row for the audit's company
        shared_retract_record(
            memory=memory,
            reason=reason,
            via=RETRACTED_VIA_MAINTENANCE,
            extra={"archive_id": str(by_original[memory.pk].pk), "mode": mode.value},
        )
    Memory.objects.filter(pk__in=[m.pk for m in memories]).delete()
    return ArchiveOutcome(archived=archived, shared_retracted=len(shared))


def archived_from_memory(
    memory: Memory,
    *,
    mode: ArchivalMode,
    archived_at: datetime,
    summary_memory_id: UUID | None = None,
    run: MaintenanceRun | None = None,
) -> ArchivedMemory:
    """An unsaved archive row holding the whole of ``memory``."""
    return ArchivedMemory(
        company_id=memory.company_id,
        agent_id=memory.agent_id,
        original_id=memory.pk,
        namespace=memory.namespace,
        category=memory.category,
        content=memory.content,
        context=memory.context,
        source=memory.source,
        confidence=memory.confidence,
        tags=list(memory.tags),
        subject=memory.subject,
        metadata={
            "level": memory.level,
            "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
            "embedder_id": memory.embedder_id,
            "shared": memory.is_shared,
            **({"task_id": memory.task_id} if memory.task_id is not None else {}),
        },
        created_at=memory.created_at,
        archived_at=max(archived_at, memory.created_at),
        mode=mode.value,
        summary_memory_id=summary_memory_id,
        maintenance_run=run,
    )


def archive_memories(
    *,
    memories: Sequence[Memory],
    modes: Mapping[UUID, ArchivalMode],
    summary_memory_id: UUID | None,
    run: MaintenanceRun | None = None,
    now: datetime | None = None,
    metadata: Mapping[UUID, dict] | None = None,
) -> list[ArchivedMemory]:
    """Write archive rows for ``memories`` (the caller deletes them from the hot store in the
    same transaction). Each row's ``metadata`` gets what the capabilities' archive snapshots
    (:func:`memory.core.extensions.on_archiving`) keep of the memory — a lesson's tiers and
    counters — and then the caller's own ``metadata`` for it."""
    now = now or timezone.now()
    rows = [
        archived_from_memory(
            memory,
            mode=modes[memory.pk],
            archived_at=now,
            summary_memory_id=summary_memory_id,
            run=run,
        )
        for memory in memories
    ]
    for snapshot in archive_snapshots():
        kept = snapshot(memories)
        for row in rows:
            row.metadata.update(kept.get(row.original_id, {}))
    for row in rows:
        row.metadata.update((metadata or {}).get(row.original_id, {}))
    archived = ArchivedMemory.objects.bulk_create(rows)
    _archived_events(memories, archived, now=now)
    return archived


def _archived_events(
    memories: Sequence[Memory], archived: Sequence[ArchivedMemory], *, now: datetime
) -> None:
    """``memory.archived`` for each of ``memories`` (per company: a batch may span several),
    naming its archive row (restorable by either id)."""
    by_original = {a.original_id: a for a in archived}
    companies: dict[int, list[Memory]] = {}
    for memory in memories:
        companies.setdefault(memory.company_id, []).append(memory)
    for company_id, members in companies.items():
        memory_events_record(
            company_id=company_id,
            event=MEMORY_ARCHIVED,
            memories=members,
            extra={
                m.pk: {
                    "archive": {
                        "id": str(by_original[m.pk].pk),
                        "mode": by_original[m.pk].mode,
                        "archived_at": by_original[m.pk].archived_at.isoformat(),
                    }
                }
                for m in members
            },
            now=now,
        )


@dataclass(frozen=True)
class RestoreResult:
    archived: ArchivedMemory
    memory_id: UUID


def archive_restore(
    *,
    agent: Agent,
    archive_id: UUID | str,
    principal=None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
) -> RestoreResult:
    """Put one of ``agent``'s archived memories back into the hot store; ``archive_id`` is
    the archive row's id or the memory's original id. A shared entry comes back shared.

    The memory is embedded before the archive row is locked (a slow embedder holds up no
    other restore); the store runs under the lock with those vectors and is audited once,
    as ``memory.archive_restored``, in the same transaction.
    """
    now = now or timezone.now()
    entry = archive_get(agent=agent, archive_id=archive_id)  # 404 for anyone else's
    if entry.restored_at is not None:
        raise ConflictError(ALREADY_RESTORED, code="archive_already_restored")
    if agent.memory_level != MemoryLevel.PERSISTENT:
        raise UnprocessableError(
            RESTORE_NEEDS_PERSISTENT.format(level=agent.memory_level),
            code="restore_needs_persistent_level",
        )
    shared = bool(entry.metadata.get("shared"))
    if shared:
        shared_knowledge_require(agent.company)
    embeddings = memory_store_embed(
        agent=agent, requests=[_restore_request(entry, now=now)], embedder=embedder
    )
    with transaction.atomic():
        locked = ArchivedMemory.objects.select_for_update().get(pk=entry.pk)
        if locked.restored_at is not None:
            raise ConflictError(ALREADY_RESTORED, code="archive_already_restored")
        # Built again from the locked row: should its text differ from what was embedded,
        # the memory is stored pending rather than with another text's vector.
        (result,) = memory_store_batch(
            agent=agent,
            requests=[_restore_request(locked, now=now)],
            now=now,
            deduplicate=False,
            embeddings=embeddings,
            shared=shared,  # a shared entry archived by maintenance is shared again
            audit=False,  # recorded below as memory.archive_restored
            event=None,  # recorded below as memory.restored
        )
        for handler in archive_restore_handlers():  # e.g. a pruned lesson's tiers come back
            handler(memory_id=result.id, company=agent.company, metadata=locked.metadata)
        locked.restored_at = now
        locked.restored_memory_id = result.id
        locked.save(update_fields=["restored_at", "restored_memory_id"])
        audit_record(
            company=agent.company,
            principal=principal,
            actor_agent=None if principal is not None else agent,
            action_type=AuditAction.MEMORY_ARCHIVE_RESTORED,
            target_type="archived_memory",
            target_id=str(locked.pk),
            details={
                "agent_id": agent.pk,
                "original_id": str(locked.original_id),
                "memory_id": str(result.id),
                **({"shared": True} if shared else {}),
            },
        )
        # a persistent agent's store without deduplication always writes the row
        assert result.id is not None
        memory_events_record(
            company_id=agent.company_id,
            event=MEMORY_RESTORED,
            memory_ids=[result.id],
            extra={
                result.id: {
                    "archive": {"id": str(locked.pk), "original_id": str(locked.original_id)}
                }
            },
            now=now,
        )
    return RestoreResult(archived=locked, memory_id=result.id)


def _restore_request(entry: ArchivedMemory, *, now: datetime) -> MemoryStoreRequest:
    return MemoryStoreRequest(
        content=entry.content,
        category=MemoryCategory(entry.category),
        namespace=entry.namespace,
        context=entry.context,
        source=entry.source,
        confidence=entry.confidence,
        tags=tuple(entry.tags),
        subject=entry.subject or None,
        created_at=min(entry.created_at, now),
    )
