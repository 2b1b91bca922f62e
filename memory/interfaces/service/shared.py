"""The company's shared knowledge: publish, search (logged), retract."""

from __future__ import annotations

import time
from uuid import UUID

from memory.core.domain import MemoryStoreRequest, StoreResult
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import SearchResult, shared_search
from memory.core.services import shared
from memory.interfaces.service.base import ServiceBase, guard, routed
from synthorg.tools import Confirmation


class SharedKnowledgeMixin(ServiceBase):
    """Shared knowledge, while the company has it on (403 ``shared_knowledge_disabled``)."""

    @routed
    def shared_publish(self, request: MemoryStoreRequest) -> StoreResult:
        result = shared.shared_publish(agent=self.agent, request=request, principal=self.principal)
        return self._advised(result, request.tags)

    @routed
    def shared_search(self, query: MemoryQuery, *, exclude_self: bool = False) -> SearchResult:
        started = time.perf_counter()
        config, full_config = self.config.retrieval, self.full_config
        result = self.replica_read(
            lambda: shared_search(
                company=self.company,
                query=query,
                exclude_agent=self.agent if exclude_self else None,
                config=config,
                full_config=full_config,
            )
        )
        self._log(
            "shared_search",
            query.text or "",
            started,
            len(result.hits),
            result.degraded,
            query.subject,
        )
        return result

    @routed
    def shared_retract(
        self, memory_id: UUID | str, *, confirmation: Confirmation | None = None
    ) -> None:
        shared.shared_retract(
            agent=self.agent,
            memory_id=memory_id,
            principal=self.principal,
            **guard(confirmation),
        )
