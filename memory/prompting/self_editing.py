"""The self-editing strategy's three memory blocks, over the agent's ordinary memories.

* **Core**: the agent's live SEMANTIC memories tagged ``core``. Always injected, within
  ``memory.self_editing.core_token_budget`` (a write that would overflow the budget is
  refused with 422 ``core_memory_full``: replace an entry instead); writes are refused with
  403 ``core_writes_disabled`` when ``allow_core_writes`` is false or the agent is listed in
  ``locked_agents``.
* **Archival**: every other memory of the agent, searched with the hybrid pipeline (at most
  ``archival_search_limit`` results) and written in the ``archival_write_categories`` only.
* **Recall**: the agent's conversation history — the messages of its conversations in the
  conversation-ingestion app (``memory.ingestion``): ``recall_memory_write`` appends a turn
  through its flush service (so extraction later learns from it like from any flushed
  conversation), ``recall_memory_read`` lists turns newest first, or those matching a query.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from django.db import transaction

from memory.core.domain import (
    CORE_TAG,
    MemoryStoreRequest,
    MemoryUpdateRequest,
    StoreResult,
    parse_request,
)
from memory.core.errors import MemoryAccessError, MemoryInputError, MemoryNotFoundError
from memory.core.models.memory import Memory
from memory.core.retrieval.packing import pack_greedy
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.memories import agent_memories
from memory.core.selectors.search import SearchHit, memory_search
from memory.core.services.edit import memory_update
from memory.core.services.store import memory_store_batch, memory_store_embed
from memory.ingestion.domain import MessageIn
from memory.ingestion.selectors import conversation_messages
from memory.ingestion.services.messages import conversation_messages_append
from memory.prompting.context import ContextEntry
from persistence.audit_actions import AuditAction
from persistence.models import Agent
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import SelfEditingMemoryConfig
from synthorg.enums import MemoryCategory
from synthorg.errors import UnprocessableError

RESERVED_TAGS = frozenset({CORE_TAG})
CORE_SOURCE = "core_memory"
DEFAULT_CONVERSATION = "main"

CORE_WRITES_DISABLED = "Core memory is locked for this agent (memory.self_editing)."
CORE_MEMORY_FULL = (
    "Core memory would use {needed} of its {budget} tokens; replace or shorten an entry "
    "(replace_id) instead of adding one."
)
NOT_CORE = "No core memory with this id."
CATEGORY_NOT_WRITABLE = (
    "Archival writes in category {category!r} are not allowed "
    "(memory.self_editing.archival_write_categories)."
)
RESERVED_TAG = "The tag 'core' is reserved for core memory (use core_memory_write)."


@dataclass
class CoreBlock:
    included: list[ContextEntry]
    dropped: list[ContextEntry]
    tokens_used: int
    token_budget: int


def _settings(agent: Agent):
    return company_config(agent.company).memory.self_editing


def core_memories(*, agent: Agent) -> list[Memory]:
    """The agent's live core memories, oldest first (the block's reading order)."""
    return list(
        agent_memories(agent=agent)
        .filter(category=MemoryCategory.SEMANTIC, tags__contains=[CORE_TAG])
        .order_by("created_at", "id")
    )


def _entry(memory: Memory) -> ContextEntry:
    return ContextEntry(
        key=str(memory.pk),
        content=memory.content,
        score=1.0,
        kind="core_memory",
        label=f"core, id {memory.pk}",
        tags=tuple(memory.tags),
        memory=memory,
    )


def core_block(
    *,
    agent: Agent,
    token_budget: int | None = None,
    config: SelfEditingMemoryConfig | None = None,
) -> CoreBlock:
    """Core memory packed within ``core_token_budget`` (and ``token_budget`` if smaller):
    the most recently changed entries win, shown in creation order. ``config``: the
    company's ``memory.self_editing`` when the caller has read it."""
    budget = (config or _settings(agent)).core_token_budget
    if token_budget is not None:
        budget = min(budget, token_budget)
    entries = [_entry(memory) for memory in core_memories(agent=agent)]
    newest_first = sorted(entries, key=lambda e: e.memory.updated_at, reverse=True)
    included, dropped, used = pack_greedy(newest_first, cost=lambda e: e.tokens, budget=budget)
    order = {entry.key: index for index, entry in enumerate(entries)}
    included.sort(key=lambda e: order[e.key])
    return CoreBlock(included, dropped, used, budget)


def core_memory_write(
    *,
    agent: Agent,
    principal,
    content: str,
    replace_id: UUID | str | None = None,
    session_id: str | None = None,
    project_id: int | None = None,
) -> Memory:
    """Add a core memory, or replace the content of one (``replace_id``)."""
    settings = _settings(agent)
    if not settings.core_writes_allowed(agent.name):
        raise MemoryAccessError(CORE_WRITES_DISABLED, code="core_writes_disabled")
    request = embeddings = None
    if replace_id is None:
        request = _request(
            content, MemoryCategory.SEMANTIC, (CORE_TAG,), CORE_SOURCE, session_id, project_id
        )
        # Embedded before the agent lock below: a slow embedder must not hold up the agent's
        # other writers (every store of the agent waits on that lock).
        embeddings = memory_store_embed(agent=agent, requests=[request])
    with transaction.atomic():
        # One writer per agent at a time, so two writes cannot both fit the last tokens.
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        current = {str(m.pk): m for m in core_memories(agent=agent)}
        if replace_id is not None and str(replace_id) not in current:
            raise MemoryNotFoundError(NOT_CORE, code="memory_not_found")
        kept = [_entry(m) for key, m in current.items() if key != str(replace_id)]
        probe = ContextEntry(key="new", content=content, score=1.0, label="core, id " + "x" * 36)
        needed = sum(entry.tokens for entry in kept) + probe.tokens
        if needed > settings.core_token_budget:
            raise UnprocessableError(
                CORE_MEMORY_FULL.format(needed=needed, budget=settings.core_token_budget),
                code="core_memory_full",
                extra={"tokens_needed": needed, "core_token_budget": settings.core_token_budget},
            )
        if replace_id is not None:
            memory = memory_update(
                agent=agent,
                memory_id=replace_id,
                request=MemoryUpdateRequest(content=content),
                principal=principal,
            )
        else:
            result = memory_store_batch(
                agent=agent,
                requests=[request],
                principal=principal,
                deduplicate=False,
                embeddings=embeddings,
                audit=False,  # memory.core_written below is the record of this write
            )[0]
            if result.id is None:
                raise MemoryInputError(
                    "This agent's memory level is 'none': it cannot keep core memory.",
                    code="memory_level_none",
                )
            memory = Memory.objects.get(pk=result.id)
        audit_record(
            company=agent.company,
            principal=principal,
            action_type=AuditAction.MEMORY_CORE_WRITTEN,
            target_type="memory",
            target_id=memory.pk,
            details={"replaced": replace_id is not None, "tokens_used": needed},
        )
    return memory


def archival_search(
    *, agent: Agent, query: str, limit: int | None = None, full_config: CompanyConfig | None = None
) -> list[SearchHit]:
    """Hybrid search over the agent's memories other than core memory (``full_config``: the
    company's parsed config when the caller has read it; read once here otherwise)."""
    full_config = full_config or company_config(agent.company)
    cap = full_config.memory.self_editing.archival_search_limit
    limit = min(limit or cap, cap)
    result = memory_search(
        agent=agent, query=MemoryQuery(text=query, limit=limit + 50), full_config=full_config
    )
    hits = [hit for hit in result.hits if not RESERVED_TAGS.intersection(hit.memory.tags)]
    return hits[:limit]


def archival_write(
    *,
    agent: Agent,
    principal,
    content: str,
    category: MemoryCategory,
    tags: tuple[str, ...] = (),
    session_id: str | None = None,
    project_id: int | None = None,
) -> StoreResult:
    category = MemoryCategory(category)
    if category not in _settings(agent).archival_write_categories:
        raise MemoryAccessError(
            CATEGORY_NOT_WRITABLE.format(category=category.value), code="category_write_denied"
        )
    request = _request(content, category, tags, "", session_id, project_id)
    if RESERVED_TAGS.intersection(request.tags):
        raise MemoryInputError(RESERVED_TAG, code="reserved_tag")
    return memory_store_batch(agent=agent, requests=[request], principal=principal)[0]


def recall_write(
    *,
    agent: Agent,
    principal,
    content: str,
    role: str,
    conversation_id: str = DEFAULT_CONVERSATION,
    session_id: str | None = None,
    project_id: int | None = None,
):
    """Append one turn to the agent's conversation (the ingestion app's flush service:
    stored at once, facts extracted from it later by the debounced extraction)."""

    message = parse_request(MessageIn, {"role": role, "content": content})
    return conversation_messages_append(
        agent=agent,
        conversation_id=conversation_id,
        messages=[message],
        session_id=session_id,
        project_id=project_id,
        principal=principal,
    )


def recall_read(
    *, agent: Agent, query: str | None, limit: int, conversation_id: str | None = None
) -> list:
    """Conversation turns, newest first: all of the agent's conversations (or one), those
    matching ``query`` (full text, english stemming) when it is given."""

    messages = conversation_messages(
        agent=agent, conversation_id=conversation_id, query=(query or "").strip() or None
    )
    return list(messages.order_by("-created_at", "-seq", "-id")[:limit])


def _request(content, category, tags, source, session_id, project_id) -> MemoryStoreRequest:
    fields = {
        "content": content,
        "category": category,
        "tags": list(tags),
        "source": source,
        "session_id": session_id,
        "project_id": project_id,
    }
    return parse_request(MemoryStoreRequest, {k: v for k, v in fields.items() if v is not None})
