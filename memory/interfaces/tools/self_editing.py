"""The self-editing strategy's six tools (core, archival and recall memory)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field

from memory.core.domain import MAX_TAGS, MEMORY_CONTENT_MAX_CHARS
from memory.core.retrieval.filtering import NON_INFERABLE_GUIDANCE
from memory.interfaces.api.conversations.serializers import ConversationMessageSerializer
from memory.interfaces.api.serializers import MemorySerializer
from memory.interfaces.tools.toolkit import (
    EXCERPT,
    BindingArgs,
    Category,
    hits_payload,
    hits_text,
    service_for,
    store_payload,
    store_text,
)
from synthorg.tools import ToolArguments, ToolContext, ToolResult, ToolSpec, json_ready


class CoreReadArgs(ToolArguments):
    pass


class CoreWriteArgs(BindingArgs):
    content: str = Field(
        min_length=1,
        max_length=MEMORY_CONTENT_MAX_CHARS,
        description="A short fact that should always be in your prompt.",
    )
    replace_id: UUID | None = Field(
        default=None,
        description="The id of a core memory to replace (from core_memory_read); omit to add.",
    )


class ArchivalSearchArgs(ToolArguments):
    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    limit: int | None = Field(
        default=None, ge=1, le=50, description="How many results (capped by the company)."
    )


class ArchivalWriteArgs(BindingArgs):
    content: str = Field(
        min_length=1, max_length=MEMORY_CONTENT_MAX_CHARS, description="What to remember."
    )
    category: Category = Field(default="semantic", description="The memory category.")
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description=f"Labels. {NON_INFERABLE_GUIDANCE}"
    )


class RecallReadArgs(ToolArguments):
    query: str | None = Field(
        default=None,
        max_length=4000,
        description="Find the turns about this; omit for the most recent turns.",
    )
    conversation_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="Only this conversation."
    )
    limit: int = Field(default=10, ge=1, le=50, description="How many turns.")


class RecallWriteArgs(ToolArguments):
    content: str = Field(min_length=1, max_length=100_000, description="What was said.")
    role: Literal["user", "assistant", "system", "tool"] = Field(
        default="user", description="Who said it."
    )
    conversation_id: str = Field(
        default="main", min_length=1, max_length=200, description="The conversation's id."
    )
    session_id: str | None = Field(
        default=None,
        max_length=200,
        description="Required when your memory level is 'session': the current session id.",
    )
    project_id: int | None = Field(
        default=None,
        ge=1,
        description="Required when your memory level is 'project': the open project's id.",
    )


def core_memory_read(ctx: ToolContext, args: CoreReadArgs) -> ToolResult:
    block = service_for(ctx).core_read()
    entries = [
        {"id": entry.key, "content": entry.content, "tokens": entry.tokens}
        for entry in block.included
    ]
    data = {
        "entries": entries,
        "dropped": [entry.key for entry in block.dropped],
        "tokens_used": block.tokens_used,
        "core_token_budget": block.token_budget,
    }
    text = "\n".join(f"- [{e['id']}] {e['content']}" for e in entries) or "Core memory is empty."
    return ToolResult(f"{text}\n({block.tokens_used}/{block.token_budget} tokens used)", data)


def core_memory_write(ctx: ToolContext, args: CoreWriteArgs) -> ToolResult:

    memory = service_for(ctx).core_write(**args.model_dump())
    verb = "replaced" if args.replace_id else "added"
    return ToolResult(
        f"Core memory {verb}: {memory.pk}.", json_ready(MemorySerializer(memory).data)
    )


def archival_memory_search(ctx: ToolContext, args: ArchivalSearchArgs) -> ToolResult:
    hits = service_for(ctx).archival_search(query=args.query, limit=args.limit)
    return ToolResult(
        hits_text(hits, empty="Nothing in archival memory matches."), hits_payload(hits, [])
    )


def archival_memory_write(ctx: ToolContext, args: ArchivalWriteArgs) -> ToolResult:
    fields = args.model_dump()
    fields["tags"] = tuple(fields["tags"])
    result = service_for(ctx).archival_write(**fields)
    return ToolResult(store_text(result), store_payload(result))


def _turns_text(messages) -> str:
    if not messages:
        return "No conversation history."
    return "\n".join(
        f"- [{m.conversation.external_id} #{m.seq}] {m.created_at:%Y-%m-%d %H:%M} {m.role}: "
        f"{m.content if len(m.content) <= EXCERPT else m.content[:EXCERPT] + '…'}"
        for m in messages
    )


def recall_memory_read(ctx: ToolContext, args: RecallReadArgs) -> ToolResult:

    messages = service_for(ctx).recall_read(
        query=args.query, limit=args.limit, conversation_id=args.conversation_id
    )
    data = {"results": json_ready(ConversationMessageSerializer(messages, many=True).data)}
    return ToolResult(_turns_text(messages), data)


def recall_memory_write(ctx: ToolContext, args: RecallWriteArgs) -> ToolResult:
    result = service_for(ctx).recall_write(**args.model_dump())
    if not result.stored:
        text = "Not stored: this agent's memory level is 'none'."
    else:
        text = f"Recorded as turn {result.last_seq} of conversation {result.conversation_id}."
    return ToolResult(text, json_ready(result.model_dump(mode="json")))


SELF_EDITING_TOOLS = (
    ToolSpec(
        "core_memory_read",
        "Read your core memory: the short facts that are always in your prompt, with ids.",
        CoreReadArgs,
        core_memory_read,
        group="self_editing",
    ),
    ToolSpec(
        "core_memory_write",
        "Add a fact to your core memory, or replace one (replace_id). Core memory has a "
        "token budget: when it is full, replace or shorten an entry.",
        CoreWriteArgs,
        core_memory_write,
        group="self_editing",
    ),
    ToolSpec(
        "archival_memory_search",
        "Search your archival memory (everything you stored that is not core or "
        "conversation history) with hybrid keyword + semantic search.",
        ArchivalSearchArgs,
        archival_memory_search,
        group="self_editing",
    ),
    ToolSpec(
        "archival_memory_write",
        "Store something in archival memory, to find later with archival_memory_search. "
        + NON_INFERABLE_GUIDANCE,
        ArchivalWriteArgs,
        archival_memory_write,
        group="self_editing",
    ),
    ToolSpec(
        "recall_memory_read",
        "Read your conversation history: the most recent turns, or those about a query.",
        RecallReadArgs,
        recall_memory_read,
        group="self_editing",
    ),
    ToolSpec(
        "recall_memory_write",
        "Record a conversation turn in your history (recall memory); facts in it are "
        "extracted into your memory later.",
        RecallWriteArgs,
        recall_memory_write,
        group="self_editing",
    ),
)
