"""The Django + Postgres (pgvector) implementation of the seeds' backend protocols.

A thin adapter: every operation calls the same services and selectors the REST API uses,
so the rules (levels, write gate, isolation, expiry) are enforced in one place. Database
failures are translated into the seeds' error family.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from memory.domain import MemoryEntry, MemoryMetadata, MemoryStoreRequest
from memory.errors import (
    MemoryConnectionError,
    MemoryError,
    MemoryNotFoundError,
    MemoryRetrievalError,
    MemoryStoreError,
)
from memory.models import Memory
from memory.selectors.memories import agent_memory_count, agent_memory_get
from memory.services.lifecycle import memory_delete
from memory.services.shared import shared_publish, shared_retract
from memory.services.store import memory_store
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory

logger = logging.getLogger(__name__)

NOT_CONNECTED = "The memory backend is not connected; call connect() first."
UNKNOWN_AGENT = "No agent with this id exists in the backend's company."


def memory_entry(memory: Memory, *, relevance: float | None = None) -> MemoryEntry:
    return MemoryEntry(
        id=str(memory.pk),
        agent_id=str(memory.agent_id),
        namespace=memory.namespace,
        category=MemoryCategory(memory.category),
        content=memory.content,
        metadata=MemoryMetadata(
            source=memory.source or None, confidence=memory.confidence, tags=tuple(memory.tags)
        ),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        expires_at=memory.expires_at,
        relevance_score=relevance,
    )


class PostgresCapabilities:
    def __init__(self, company: Company) -> None:
        self._options = company_config(company).memory.options

    supported_categories = frozenset(MemoryCategory)
    supports_graph = False
    supports_temporal = True
    supports_vector_search = True

    @property
    def supports_shared_access(self) -> bool:
        return self._options.shared_knowledge_base

    @property
    def max_memories_per_agent(self) -> int | None:
        return self._options.max_memories_per_agent


class PostgresMemoryBackend:
    """``MemoryBackend`` + ``SharedKnowledgeStore`` for one company."""

    backend_name = "pgvector"

    def __init__(self, company: Company) -> None:
        self.company = company
        self._connected = False

    # --- lifecycle ------------------------------------------------------------------------

    def connect(self) -> None:
        try:
            connection.ensure_connection()
        except (OperationalError, InterfaceError) as exc:
            raise MemoryConnectionError(f"cannot reach the memory database: {exc}") from exc
        self._connected = True

    def disconnect(self) -> None:
        self._connected = False

    def health_check(self) -> bool:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                return cursor.fetchone() == (1,)
        except DatabaseError:
            logger.warning("memory backend health check failed", exc_info=True)
            return False

    @property
    def is_connected(self) -> bool:
        return self._connected

    @property
    def capabilities(self) -> PostgresCapabilities:
        return PostgresCapabilities(self.company)

    # --- MemoryBackend --------------------------------------------------------------------

    def store(self, agent_id: str, request: MemoryStoreRequest) -> str:
        with self._guard(MemoryStoreError):
            result = memory_store(agent=self._agent(agent_id), request=request)
            return "" if result.id is None else str(result.id)

    def retrieve(self, agent_id: str, query: Any) -> tuple[MemoryEntry, ...]:
        from memory.selectors.search import memory_search

        with self._guard(MemoryRetrievalError):
            result = memory_search(agent=self._agent(agent_id), query=query, include_shared=False)
            return tuple(memory_entry(hit.memory, relevance=hit.relevance) for hit in result.hits)

    def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        with self._guard(MemoryRetrievalError):
            try:
                return memory_entry(
                    agent_memory_get(agent=self._agent(agent_id), memory_id=memory_id)
                )
            except MemoryNotFoundError:
                return None

    def delete(self, agent_id: str, memory_id: str) -> bool:
        with self._guard(MemoryStoreError):
            try:
                memory_delete(agent=self._agent(agent_id), memory_id=memory_id)
            except MemoryNotFoundError:
                return False
            return True

    def count(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        with self._guard(MemoryRetrievalError):
            return agent_memory_count(
                agent=self._agent(agent_id), category=category.value if category else None
            )

    # --- SharedKnowledgeStore -------------------------------------------------------------

    def publish(self, agent_id: str, request: MemoryStoreRequest) -> str:
        with self._guard(MemoryStoreError):
            return str(shared_publish(agent=self._agent(agent_id), request=request).id)

    def search_shared(
        self, query: Any, *, exclude_agent: str | None = None
    ) -> tuple[MemoryEntry, ...]:
        from memory.selectors.search import shared_search

        with self._guard(MemoryRetrievalError):
            excluded = self._agent(exclude_agent) if exclude_agent is not None else None
            result = shared_search(company=self.company, query=query, exclude_agent=excluded)
            return tuple(memory_entry(hit.memory, relevance=hit.relevance) for hit in result.hits)

    def retract(self, agent_id: str, memory_id: str) -> bool:
        with self._guard(MemoryStoreError):
            try:
                shared_retract(agent=self._agent(agent_id), memory_id=memory_id)
            except MemoryNotFoundError:
                return False
            return True

    # --- helpers --------------------------------------------------------------------------

    def _agent(self, agent_id: str | int) -> Agent:
        try:
            return Agent.objects.select_related("company").get(
                company=self.company, pk=int(agent_id)
            )
        except (Agent.DoesNotExist, ValueError, TypeError):
            raise MemoryNotFoundError(UNKNOWN_AGENT, code="agent_not_found") from None

    @contextlib.contextmanager
    def _guard(self, failure: type[MemoryError]) -> Iterator[None]:
        if not self._connected:
            raise MemoryConnectionError(NOT_CONNECTED, code="memory_not_connected")
        try:
            yield
        except (OperationalError, InterfaceError) as exc:
            raise MemoryConnectionError(f"memory database unavailable: {exc}") from exc
        except (DatabaseError, ValidationError) as exc:
            raise failure(f"memory operation failed: {exc}") from exc
