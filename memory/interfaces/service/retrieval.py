"""Retrieval: hybrid search (REST and the ``search_memory`` tool) and the prompt context
of the company's injection strategy, each recorded in the request log."""

from __future__ import annotations

import functools
import time

from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import SearchResult, memory_search
from memory.interfaces.service.base import ServiceBase, routed
from memory.prompting.context import ContextRequest, PreparedContext
from memory.prompting.strategies import (
    MemoryInjectionStrategy,
    ToolSearchResult,
    search_with_reformulation,
    strategy_for,
)
from orgmemory.services.policy_deliveries import policy_deliveries_write, policy_delivery
from synthorg.after_response import after_response


class RetrievalMixin(ServiceBase):
    """Search and context: each hands the config read once down (nothing below reads it)."""

    @functools.cached_property
    def strategy(self) -> MemoryInjectionStrategy:
        """The injection strategy the company configures, looked up once."""
        return strategy_for(self.agent, self.config, full_config=self.full_config)

    @routed
    def search(self, query: MemoryQuery, *, include_shared: bool | None = None) -> SearchResult:
        started = time.perf_counter()
        config, full_config = self.config.retrieval, self.full_config
        result = self.replica_read(
            lambda: memory_search(
                agent=self.agent,
                query=query,
                include_shared=include_shared,
                config=config,
                full_config=full_config,
            )
        )
        self._log(
            "search", query.text or "", started, len(result.hits), result.degraded, query.subject
        )
        return result

    @routed
    def tool_search(self, query: MemoryQuery) -> ToolSearchResult:
        """Hybrid search as the ``search_memory`` tool runs it: with the Search-and-Ask loop
        when the company enables ``query_reformulation_enabled``."""
        started = time.perf_counter()
        config, full_config = self.config.retrieval, self.full_config
        result = self.replica_read(
            lambda: search_with_reformulation(
                agent=self.agent, query=query, config=config, full_config=full_config
            )
        )
        self._log(
            "search", query.text or "", started, len(result.hits), result.degraded, query.subject
        )
        return result

    @routed
    def context(self, request: ContextRequest, *, dry_run: bool = False) -> PreparedContext:
        """The prompt context of the agent's configured strategy (``prepare_messages``).

        ``dry_run``: the same call with no side effect of its own (no request-log row), for
        a human previewing what the agent would receive."""
        started = time.perf_counter()
        strategy = self.strategy
        prepared = self.replica_read(lambda: strategy.prepare_messages(request))
        if not dry_run:
            self._log(
                "context",
                request.query.text or "",
                started,
                len(prepared.included),
                prepared.degraded,
                request.query.subject,
            )
            if prepared.policy_block is not None:  # bookkeeping, like the log row
                delivery = policy_delivery(agent=self.agent, block=prepared.policy_block)
                after_response(policy_deliveries_write, delivery)
        return prepared
