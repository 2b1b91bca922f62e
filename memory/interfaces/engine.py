"""``MemoryEngine``: seed 004's one importable object for in-process, synchronous callers.

An agent runtime that lives in the same process as this service (a worker, a management
command, a notebook on the server) holds one ``MemoryEngine`` per agent and calls

=========================  ==============================================================
``manage(content, ...)``   create (``action="create"``), change (``"update"``, ``id``) or
                           delete (``"delete"``, ``id``) one memory
``search(query, ...)``     hybrid search (the company's fusion and filters)
``flush(messages, ...)``   append conversation messages; extraction runs later (debounced)
``dream()``                ask for a deep dream now (rate-limited, queued; see
                           :mod:`memory.ingestion.services.dream_requests`)
``format_for_injection``   the agent's prompt context (its configured strategy) as one
                           string within ``max_tokens``
=========================  ==============================================================

It is a thin facade over :class:`~memory.interfaces.service.MemoryService`, the one entry
point REST, the tools and MCP use: the same write gate, audit trail, request log, errors
(:class:`synthorg.errors.DomainError` subclasses) and rate limits — no second write path.
Every method is synchronous and runs the ORM: call it from sync code (from async code, wrap
it in ``asgiref.sync.sync_to_async``). Requests logged through it say ``via: engine``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal
from uuid import UUID

from memory.core.domain import MemoryStoreRequest, MemoryUpdateRequest, StoreResult, parse_request
from memory.core.models import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import SearchResult
from memory.ingestion.domain import FlushResult, MessageIn
from memory.ingestion.models import DreamRequest
from memory.interfaces.service import MemoryService
from memory.prompting.context import ContextRequest
from persistence.models import Agent
from persistence.principal import Principal
from synthorg.errors import InvalidInputError

ACTIONS = ("create", "update", "delete")
ID_REQUIRED = "manage(action={action!r}) needs the id of the memory."
UNKNOWN_ACTION = "action must be one of create, update, delete; got {action!r}."
DEFAULT_CONVERSATION = "main"


class MemoryEngine:
    """One agent's memory, in process (see the module doc)."""

    def __init__(self, agent: Agent, *, via: str = "engine") -> None:
        self.agent = agent
        self.service = MemoryService(Principal.for_agent(agent), via=via)

    def manage(
        self,
        content: str | None = None,
        *,
        action: Literal["create", "update", "delete"] = "create",
        id: UUID | str | None = None,
        category: str | None = None,
        **fields: Any,
    ) -> StoreResult | Memory | None:
        """``create``: a :class:`StoreResult` (its ``warnings`` included; ``category``
        defaults to ``semantic``); ``update``: the changed :class:`Memory` (only what is
        given changes); ``delete``: ``None``. ``fields``: the store / update request's other
        fields (``tags``, ``namespace``, ``context``, ``session_id`` …)."""
        if action not in ACTIONS:
            raise InvalidInputError(UNKNOWN_ACTION.format(action=action), code="unknown_action")
        if fields.get("namespace") is not None:  # a flat name or a tuple (the templates)
            fields["namespace"] = self.service.namespace(fields["namespace"])
        if action == "create":
            data = {"content": content, "category": category or "semantic", **fields}
            return self.service.store(parse_request(MemoryStoreRequest, _present(data)))
        if id is None:
            raise InvalidInputError(ID_REQUIRED.format(action=action), code="id_required")
        if action == "delete":
            self.service.delete(id)
            return None
        data = {"content": content, "category": category, **fields}
        return self.service.update(id, parse_request(MemoryUpdateRequest, _present(data)))

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        categories: Sequence[str] = (),
        namespaces: Sequence[str | Sequence[str]] = (),
        tags: Sequence[str] = (),
    ) -> SearchResult:
        fields = {
            "text": query,
            "limit": limit,
            "categories": tuple(categories),
            "namespaces": self.service.namespaces(namespaces),
            "tags": tuple(tags),
        }
        return self.service.search(parse_request(MemoryQuery, fields))

    def flush(
        self,
        messages: Iterable[MessageIn | Mapping[str, Any]],
        *,
        conversation_id: str = DEFAULT_CONVERSATION,
        session_id: str | None = None,
        project_id: int | None = None,
    ) -> FlushResult:
        parsed = [
            m if isinstance(m, MessageIn) else parse_request(MessageIn, m, prefix=f"[{i}]")
            for i, m in enumerate(messages)
        ]
        return self.service.conversation_append(
            conversation_id, parsed, session_id=session_id, project_id=project_id
        )

    def dream(self) -> DreamRequest:
        return self.service.dream_request()

    def format_for_injection(
        self, query: str, *, max_tokens: int = 800, include_org: bool = True
    ) -> str:
        """The agent's prompt context for ``query`` as one string (the messages' contents,
        blank-line separated): the memories within ``max_tokens``, with the strategy's
        instruction (outside it, as for every strategy); under the ``context`` strategy
        ``""`` when nothing is relevant (no memory or fact fitted, no core policy pinned)."""
        request = ContextRequest.build(
            query_text=query, token_budget=max_tokens, include_org=include_org
        )
        prepared = self.service.context(request)
        retrieved_nothing = not prepared.included and prepared.policy_block is None
        if retrieved_nothing and self.service.strategy.strategy_name == "context":
            return ""
        return "\n\n".join(message["content"] for message in prepared.messages)


def _present(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}
