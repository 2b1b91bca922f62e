"""The agent's private memories and its archive: store, read, revise, delete, end a session,
search and restore what maintenance archived."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db.models import QuerySet

from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest, StoreResult
from memory.core.errors import MemoryNotFoundError, SharedKnowledgeDisabledError
from memory.core.models import ArchivedMemory, Memory, MemoryRevision
from memory.core.selectors.archive import ArchiveQuery, archive_search
from memory.core.selectors.memories import (
    agent_memories,
    agent_memory_count,
    agent_memory_get,
    memory_revisions,
    shared_memory_get,
)
from memory.core.services import edit, store
from memory.core.services.archive import RestoreResult, archive_restore
from memory.interfaces.service.base import NOT_FOUND, ServiceBase, guard, routed
from synthorg.tools import Confirmation


class MemoriesMixin(ServiceBase):
    """Private memories and the archive (what maintenance moved out of the live set)."""

    @routed
    def store(self, request: MemoryStoreRequest) -> StoreResult:
        result = store.memory_store(agent=self.agent, request=request, principal=self.principal)
        return self._advised(result, request.tags)

    @routed
    def store_batch(self, requests: Sequence[MemoryStoreRequest]) -> list[StoreResult]:
        results = store.memory_store_batch(
            agent=self.agent, requests=requests, principal=self.principal
        )
        return [
            self._advised(result, request.tags)
            for result, request in zip(results, requests, strict=True)
        ]

    @routed
    def get(self, memory_id: UUID | str) -> Memory:
        return agent_memory_get(agent=self.agent, memory_id=memory_id)

    @routed
    def recall(self, memory_id: UUID | str) -> Memory:
        """A memory the agent can read: its own, or the company's shared knowledge while
        the company has it on (what ``search_memory`` returns, so every hit's id can be
        recalled)."""
        try:
            return agent_memory_get(agent=self.agent, memory_id=memory_id)
        except MemoryNotFoundError:
            try:
                return shared_memory_get(company=self.company, memory_id=memory_id)
            except (MemoryNotFoundError, SharedKnowledgeDisabledError):
                raise MemoryNotFoundError(NOT_FOUND, code="memory_not_found") from None

    @routed
    def history(self, memory_id: UUID | str) -> QuerySet[MemoryRevision]:
        """The revisions of a memory the agent can read (as :meth:`recall`: its own, or the
        company's shared knowledge; anything else is not found), oldest first."""
        return memory_revisions(self.recall(memory_id))

    @routed
    def update(self, memory_id: UUID | str, request: MemoryUpdateRequest) -> Memory:
        return edit.memory_update(
            agent=self.agent, memory_id=memory_id, request=request, principal=self.principal
        )

    @routed
    def delete(self, memory_id: UUID | str, *, confirmation: Confirmation | None = None) -> None:
        edit.memory_delete(
            agent=self.agent,
            memory_id=memory_id,
            principal=self.principal,
            **guard(confirmation),
        )

    def memories(self) -> QuerySet[Memory]:
        """The agent's memories for listing, superseded ones included (the list endpoint
        filters and pages them)."""
        return agent_memories(agent=self.agent, include_superseded=True)

    @routed
    def count(self, category: str | None = None) -> int:
        return agent_memory_count(agent=self.agent, category=category)

    @routed
    def session_end(self, session_id: str, *, confirmation: Confirmation | None = None) -> int:
        return edit.memory_session_end(
            agent=self.agent,
            session_id=session_id,
            principal=self.principal,
            **guard(confirmation),
        )

    @routed
    def archive_search(self, query: ArchiveQuery) -> list[ArchivedMemory]:
        return archive_search(agent=self.agent, query=query)

    @routed
    def archive_restore(self, archive_id: UUID | str) -> RestoreResult:
        return archive_restore(agent=self.agent, archive_id=archive_id, principal=self.principal)
