"""MemoryService: the one entry point for agent-facing calls.

The agent-facing REST views (memories, archive, context, shared knowledge, execution
reports, conversations, journal), the tool-call endpoint, the MCP server and the stdio
server hold a :class:`MemoryService` bound to the acting principal and call its methods;
none of them reaches into the services and selectors below itself. One service per request:
it reads the company's memory config once and looks the injection strategy up once, and
hands both down. Pages for humans (console, admin) and the read endpoints humans share with
agents (execution report list/detail, ``skill.md``) call the same services and
principal-aware selectors directly. The service

* requires an agent principal (memory belongs to agents; 403 ``agents_only`` otherwise),
* routes errors by type: every failure leaves as a :class:`synthorg.errors.DomainError`
  (Django's ``ValidationError`` / ``ObjectDoesNotExist`` are translated here), which the
  interfaces map to problem+json (REST) or a tool error (MCP),
* owns the audit trail of its writes (through the services, in their transactions), and
* guards destructive operations called as tools: the caller passes the
  :class:`~synthorg.tools.Confirmation` the dispatcher built from a literal ``confirm: true``
  and a non-blank ``reason``; the deletion is audited with the actor, the reason and the
  interface it came through, and
* records every search and context call in the company's request log
  (``memory.core.services.request_log``: a row with the query, the result count, the
  latency and the degraded legs, written after the response is sent —
  ``synthorg.after_response``) — the one place the REST, tool and MCP paths pass through,
  and, for a context call that pinned the core policy block, which revision the agent
  received (``orgmemory.services.policy_deliveries``: one upsert per agent).
  A ``dry_run`` context (the console's preview) runs the same strategy and records nothing.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, TypeVar
from uuid import UUID

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest, StoreResult
from memory.core.errors import (
    MemoryInputError,
    MemoryNotFoundError,
    SharedKnowledgeDisabledError,
)
from memory.core.models import ArchivedMemory, Memory, MemoryRevision
from memory.core.retrieval.filtering import tag_missing_warnings
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.archive import ArchiveQuery, archive_search
from memory.core.selectors.memories import (
    agent_memories,
    agent_memory_count,
    agent_memory_get,
    memory_revisions,
    shared_memory_get,
)
from memory.core.selectors.search import SearchHit, SearchResult, memory_search, shared_search
from memory.core.services import edit, shared, store
from memory.core.services.archive import RestoreResult, archive_restore
from memory.core.services.request_log import request_log_entry, request_log_write
from memory.ingestion import selectors as ingestion_selectors
from memory.ingestion.domain import FlushResult, MessageIn
from memory.ingestion.models import Conversation, DreamRequest, DreamRun, ExtractionRun
from memory.ingestion.services.context import conversation_context
from memory.ingestion.services.dream_requests import dream_request
from memory.ingestion.services.messages import (
    conversation_delete,
    conversation_message_pop,
    conversation_messages_append,
)
from memory.procedural.evolver.models import OrgSkill
from memory.procedural.services.reports import SubmittedReport, execution_report_submit
from memory.procedural.services.skill_pool import org_skill_applied, procedural_memory_applied
from memory.prompting import self_editing
from memory.prompting.context import ContextRequest, PreparedContext
from memory.prompting.strategies import (
    MemoryInjectionStrategy,
    ToolSearchResult,
    search_with_reformulation,
    strategy_for,
)
from orgmemory.services.policy_deliveries import policy_deliveries_write, policy_delivery
from persistence.selectors.config import company_config
from synthorg.after_response import after_response
from synthorg.company_config.memory import CompanyMemoryConfig
from synthorg.company_config.namespaces import NamespaceError, render_namespace
from synthorg.db.replicas import read_with_fallback
from synthorg.errors import AccessDeniedError
from synthorg.tools import Confirmation

AGENTS_ONLY = "Only agents (API key) have memories; this endpoint needs an agent's key."
NOT_FOUND = "No such memory."

T = TypeVar("T")


def _routed(method):
    """Translate framework errors into the domain error tree (typed error routing)."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except ObjectDoesNotExist as exc:
            raise MemoryNotFoundError(NOT_FOUND, code="memory_not_found") from exc
        except DjangoValidationError as exc:
            message = "; ".join(exc.messages) or "invalid input"
            raise MemoryInputError(message, code="validation_error") from exc

    return wrapper


class MemoryService:
    """Agent memory operations as ``principal`` (an agent's :class:`Principal`)."""

    def __init__(self, principal, *, via: str = "rest") -> None:
        agent = getattr(principal, "agent", None)
        if agent is None:
            raise AccessDeniedError(AGENTS_ONLY, code="agents_only")
        self.principal = principal
        self.agent = agent
        self.company = agent.company
        #: the interface the calls come through (``rest``, ``mcp``, ``stdio``), as logged
        self.via = via

    @functools.cached_property
    def config(self) -> CompanyMemoryConfig:
        """The company's memory config, read once per call and handed down."""
        return company_config(self.company).memory

    @functools.cached_property
    def strategy(self) -> MemoryInjectionStrategy:
        """The injection strategy the company configures, looked up once."""
        return strategy_for(self.agent, self.config)

    def namespace(self, value: str | Sequence[str], *, field: str = "namespace") -> str:
        """The flat namespace of ``value``: a string as it is, a tuple rendered through the
        company's ``memory.namespace_templates`` with ``{company}`` / ``{agent}`` bound to
        the caller (400 with the template's code, naming ``field``)."""
        try:
            return render_namespace(
                value,
                templates=self.config.namespace_templates,
                bound={"company": self.company.slug, "agent": self.agent.name},
            )
        except NamespaceError as exc:
            raise MemoryInputError(
                f"{field}: {exc.message}",
                code=exc.code,
                errors=[{"field": field, "message": exc.message, "code": exc.code}],
            ) from None

    def namespaces(
        self, values: Sequence[str | Sequence[str]], *, field: str = "namespaces"
    ) -> tuple[str, ...]:
        return tuple(
            self.namespace(value, field=f"{field}[{index}]") for index, value in enumerate(values)
        )

    def replica_read(self, read: Callable[[], T]) -> T:
        """Run ``read`` (reads only) on a streaming replica when one may serve this agent.

        Search, context and lists go through here (``synthorg.db.replicas``): on the primary
        without replicas, inside a transaction, or while the agent's last write is not yet
        replayed on any healthy replica; a replica failing mid-read is retried on the primary.
        """
        return read_with_fallback(self.principal.pk, read)

    # --- private memories -------------------------------------------------------------

    def _advised(self, result: StoreResult, tags: Sequence[str]) -> StoreResult:
        """``result`` with the advisory warnings of its write (D23: a memory stored without
        the ``non-inferable`` tag while ``non_inferable_only`` is on is stored, and told so)."""
        if not result.stored:
            return result
        warnings = tag_missing_warnings(
            required=self.config.retrieval.non_inferable_only, tags=tags
        )
        if not warnings:
            return result
        return result.model_copy(update={"warnings": (*result.warnings, *warnings)})

    @_routed
    def store(self, request: MemoryStoreRequest) -> StoreResult:
        result = store.memory_store(agent=self.agent, request=request, principal=self.principal)
        return self._advised(result, request.tags)

    @_routed
    def store_batch(self, requests: Sequence[MemoryStoreRequest]) -> list[StoreResult]:
        results = store.memory_store_batch(
            agent=self.agent, requests=requests, principal=self.principal
        )
        return [
            self._advised(result, request.tags)
            for result, request in zip(results, requests, strict=True)
        ]

    @_routed
    def get(self, memory_id: UUID | str) -> Memory:
        return agent_memory_get(agent=self.agent, memory_id=memory_id)

    @_routed
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

    @_routed
    def history(self, memory_id: UUID | str) -> QuerySet[MemoryRevision]:
        """The revisions of a memory the agent can read (as :meth:`recall`: its own, or the
        company's shared knowledge; anything else is not found), oldest first."""
        return memory_revisions(self.recall(memory_id))

    @_routed
    def update(self, memory_id: UUID | str, request: MemoryUpdateRequest) -> Memory:
        return edit.memory_update(
            agent=self.agent, memory_id=memory_id, request=request, principal=self.principal
        )

    @_routed
    def delete(self, memory_id: UUID | str, *, confirmation: Confirmation | None = None) -> None:
        edit.memory_delete(
            agent=self.agent,
            memory_id=memory_id,
            principal=self.principal,
            **_guard(confirmation),
        )

    def memories(self) -> QuerySet[Memory]:
        """The agent's memories for listing, superseded ones included (the list endpoint
        filters and pages them)."""
        return agent_memories(agent=self.agent, include_superseded=True)

    @_routed
    def count(self, category: str | None = None) -> int:
        return agent_memory_count(agent=self.agent, category=category)

    @_routed
    def session_end(self, session_id: str, *, confirmation: Confirmation | None = None) -> int:
        return edit.memory_session_end(
            agent=self.agent,
            session_id=session_id,
            principal=self.principal,
            **_guard(confirmation),
        )

    # --- the archive (what maintenance moved out of the live set) ------------------------

    @_routed
    def archive_search(self, query: ArchiveQuery) -> list[ArchivedMemory]:
        return archive_search(agent=self.agent, query=query)

    @_routed
    def archive_restore(self, archive_id: UUID | str) -> RestoreResult:
        return archive_restore(agent=self.agent, archive_id=archive_id, principal=self.principal)

    # --- retrieval ----------------------------------------------------------------------

    def _log(
        self,
        kind: str,
        text: str,
        started: float,
        count: int,
        degraded,
        subject: str | None = None,
    ) -> None:
        entry = request_log_entry(
            agent=self.agent,
            config=self.config.request_log,
            kind=kind,
            via=self.via,
            query=text,
            result_count=count,
            latency_ms=(time.perf_counter() - started) * 1000,
            degraded=degraded,
            subject=subject,
        )
        if entry is not None:
            # bookkeeping: written after the response is sent (now outside a request), and
            # never holding the agent's next reads to the primary
            after_response(request_log_write, entry)

    @_routed
    def search(self, query: MemoryQuery, *, include_shared: bool | None = None) -> SearchResult:
        started = time.perf_counter()
        config = self.config.retrieval
        result = self.replica_read(
            lambda: memory_search(
                agent=self.agent, query=query, include_shared=include_shared, config=config
            )
        )
        self._log(
            "search", query.text or "", started, len(result.hits), result.degraded, query.subject
        )
        return result

    @_routed
    def tool_search(self, query: MemoryQuery) -> ToolSearchResult:
        """Hybrid search as the ``search_memory`` tool runs it: with the Search-and-Ask loop
        when the company enables ``query_reformulation_enabled``."""
        started = time.perf_counter()
        config = self.config.retrieval
        result = self.replica_read(
            lambda: search_with_reformulation(agent=self.agent, query=query, config=config)
        )
        self._log(
            "search", query.text or "", started, len(result.hits), result.degraded, query.subject
        )
        return result

    @_routed
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

    # --- shared knowledge ---------------------------------------------------------------

    @_routed
    def shared_publish(self, request: MemoryStoreRequest) -> StoreResult:
        result = shared.shared_publish(agent=self.agent, request=request, principal=self.principal)
        return self._advised(result, request.tags)

    @_routed
    def shared_search(self, query: MemoryQuery, *, exclude_self: bool = False) -> SearchResult:
        started = time.perf_counter()
        config = self.config.retrieval
        result = self.replica_read(
            lambda: shared_search(
                company=self.company,
                query=query,
                exclude_agent=self.agent if exclude_self else None,
                config=config,
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

    @_routed
    def shared_retract(
        self, memory_id: UUID | str, *, confirmation: Confirmation | None = None
    ) -> None:
        shared.shared_retract(
            agent=self.agent,
            memory_id=memory_id,
            principal=self.principal,
            **_guard(confirmation),
        )

    # --- self-editing blocks (core / archival / recall) -----------------------------------

    @_routed
    def core_read(self):
        return self_editing.core_block(agent=self.agent)

    @_routed
    def core_write(self, *, content: str, replace_id=None, session_id=None, project_id=None):
        return self_editing.core_memory_write(
            agent=self.agent,
            principal=self.principal,
            content=content,
            replace_id=replace_id,
            session_id=session_id,
            project_id=project_id,
        )

    @_routed
    def archival_search(self, *, query: str, limit: int | None = None) -> list[SearchHit]:
        return self_editing.archival_search(agent=self.agent, query=query, limit=limit)

    @_routed
    def archival_write(self, **fields) -> StoreResult:
        result = self_editing.archival_write(agent=self.agent, principal=self.principal, **fields)
        return self._advised(result, fields.get("tags", ()))

    @_routed
    def recall_read(self, *, query: str | None, limit: int, conversation_id: str | None = None):
        return self_editing.recall_read(
            agent=self.agent, query=query, limit=limit, conversation_id=conversation_id
        )

    @_routed
    def recall_write(self, **fields):
        return self_editing.recall_write(agent=self.agent, principal=self.principal, **fields)

    # --- procedural learning (errors pass through: the services raise domain errors) -----

    def report_execution(self, data: Mapping[str, Any]) -> SubmittedReport:
        """Store an execution report; its lesson capture runs in the background."""
        return execution_report_submit(agent=self.agent, data=data)

    def lesson_applied(self, memory_id: UUID | str) -> Memory:
        return procedural_memory_applied(agent=self.agent, memory_id=memory_id)

    def org_skill_applied(self, fact_id: UUID | str) -> OrgSkill:
        return org_skill_applied(agent=self.agent, fact_id=fact_id)

    # --- conversations, journal, dream --------------------------------------------------

    def conversation_append(
        self,
        conversation_id: str,
        messages: Sequence[MessageIn],
        *,
        session_id: str | None = None,
        project_id: int | None = None,
        subject: str | None = None,
        extract_now: bool = False,
    ) -> FlushResult:
        """Flush messages of a conversation (stored now; extraction runs later, or is queued
        at once with ``extract_now``)."""
        return conversation_messages_append(
            agent=self.agent,
            conversation_id=conversation_id,
            messages=messages,
            session_id=session_id,
            project_id=project_id,
            principal=self.principal,
            subject=subject,
            extract_now=extract_now,
        )

    def extraction_outcome(self, conversation_id: str, *, first_seq: int, last_seq: int):
        """Whether the extraction of messages ``first_seq..last_seq`` of the caller's
        conversation has finished, and the memories it formed (see
        :func:`memory.ingestion.selectors.extraction_outcome`)."""
        return ingestion_selectors.extraction_outcome(
            agent=self.agent,
            conversation_id=conversation_id,
            first_seq=first_seq,
            last_seq=last_seq,
        )

    def conversations(self) -> QuerySet[Conversation]:
        return ingestion_selectors.agent_conversations(agent=self.agent)

    def conversation(self, conversation_id: str) -> Conversation:
        return ingestion_selectors.conversation_get(
            agent=self.agent, conversation_id=conversation_id
        )

    def conversation_delete(self, conversation_id: str) -> int:
        """Delete a conversation (messages, summary, runs; its memories stay)."""
        return conversation_delete(
            agent=self.agent, conversation_id=conversation_id, principal=self.principal
        )

    def conversation_message_pop(self, conversation_id: str):
        """Remove the conversation's last message and return it."""
        return conversation_message_pop(
            agent=self.agent, conversation_id=conversation_id, principal=self.principal
        )

    def conversation_messages(self, conversation_id: str, **filters) -> QuerySet:
        """``filters``: ``query``, ``role``, ``after_seq``, ``before_seq``."""
        return ingestion_selectors.conversation_messages(
            agent=self.agent, conversation_id=conversation_id, **filters
        )

    def extraction_runs(self, conversation_id: str) -> QuerySet[ExtractionRun]:
        return ingestion_selectors.conversation_runs(
            agent=self.agent, conversation_id=conversation_id
        )

    def extraction_run(self, conversation_id: str, run_id) -> ExtractionRun:
        return ingestion_selectors.conversation_run_get(
            agent=self.agent, conversation_id=conversation_id, run_id=run_id
        )

    def conversation_context(self, conversation_id: str, *, token_budget: int):
        return conversation_context(
            agent=self.agent, conversation_id=conversation_id, token_budget=token_budget
        )

    def journal_days(self) -> list[tuple[date, int]]:
        return ingestion_selectors.journal_days(agent=self.agent)

    def journal_day(self, day: date) -> str | None:
        return ingestion_selectors.journal_markdown(agent=self.agent, day=day)

    def dream_runs(self) -> QuerySet[DreamRun]:
        return ingestion_selectors.agent_dream_runs(agent=self.agent)

    def dream_request(self) -> DreamRequest:
        """Ask for a deep dream now: rate-limited (429 with ``retry_after``), queued on the
        LLM cluster under the company's LLM slots; extractive when no LLM is configured."""
        return dream_request(agent=self.agent, via=self.via)

    def dream_request_get(self, request_id: UUID | str) -> DreamRequest:
        return ingestion_selectors.agent_dream_request_get(agent=self.agent, request_id=request_id)


def _guard(confirmation: Confirmation | None) -> dict[str, str]:
    if confirmation is None:
        return {}
    return {"reason": confirmation.reason, "via": confirmation.via}
