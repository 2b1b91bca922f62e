"""Memory's tools: argument models (their JSON Schemas are what a model reads), handlers.

Every handler builds a :class:`~memory.interfaces.service.MemoryService` for the calling
principal and calls it; ``data`` is serialised with the REST API's own serializers, so a tool
call and the matching REST call return the same objects. Registered in
``MemoryInterfacesConfig.ready``; the tool-call endpoint and the MCP server serve them.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, Field

from memory.core.domain import (
    MAX_TAGS,
    MEMORY_CONTENT_MAX_CHARS,
    MEMORY_CONTEXT_MAX_CHARS,
    MemoryStoreRequest,
    MemoryUpdateRequest,
    parse_request,
)
from memory.core.retrieval.filtering import NON_INFERABLE_GUIDANCE
from memory.core.retrieval.query import MemoryQuery
from memory.interfaces.api import serializers as s
from memory.interfaces.api.conversations.serializers import DreamRequestSerializer
from memory.interfaces.tools.procedural import PROCEDURAL_TOOLS
from memory.interfaces.tools.self_editing import SELF_EDITING_TOOLS
from memory.interfaces.tools.toolkit import (
    BindingArgs,
    Category,
    hits_payload,
    hits_text,
    service_for,
    store_payload,
    store_text,
)
from memory.prompting.context import ContextRequest
from synthorg.subjects import SUBJECT_MAX_CHARS, validate_subject
from synthorg.tools import (
    DestructiveArguments,
    ToolArguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    json_ready,
    register_tool,
)

# --- arguments ------------------------------------------------------------------------

NAMESPACE_HELP = (
    "Optional: where it belongs, a name (default 'default') or a tuple such as "
    '["org", "<your company>", "<your name>"] or ["user", "<user id>"] (the company\'s '
    "namespace templates)."
)
Namespace = (
    Annotated[str, Field(min_length=1, max_length=100)]
    | Annotated[
        list[Annotated[str, Field(min_length=1, max_length=64)]], Field(min_length=1, max_length=6)
    ]
)

#: an end user's id (``synthorg.subjects``)
Subject = Annotated[
    str, Field(min_length=1, max_length=SUBJECT_MAX_CHARS), AfterValidator(validate_subject)
]


class SearchMemoryArgs(ToolArguments):
    query: str = Field(
        min_length=1, max_length=4000, description="What to look for, in natural language."
    )
    limit: int = Field(default=5, ge=1, le=50, description="How many memories to return.")
    categories: list[Category] | None = Field(
        default=None, description="Only these memory categories (default: all)."
    )
    namespaces: list[Namespace] | None = Field(
        default=None, max_length=50, description="Only these namespaces (default: all)."
    )
    subject: Subject | None = Field(
        default=None, description="Only memories about this end user (your app's user id)."
    )
    task_id: int | None = Field(
        default=None,
        ge=1,
        description=(
            "The task you are working on: its working notes are searched too (without it, "
            "no task's notes are)."
        ),
    )


class RecallMemoryArgs(ToolArguments):
    id: UUID = Field(description="The id of a memory, as search_memory returned it.")


class StoreMemoryArgs(BindingArgs):
    content: str = Field(
        min_length=1,
        max_length=MEMORY_CONTENT_MAX_CHARS,
        description="The fact, decision or lesson to remember, self-contained.",
    )
    category: Category = Field(
        default="semantic",
        description=(
            "semantic: facts and knowledge; episodic: what happened; procedural: how to do "
            "something; social: about people; working: short-lived notes."
        ),
    )
    tags: list[str] = Field(
        default_factory=list, max_length=MAX_TAGS, description=f"Labels. {NON_INFERABLE_GUIDANCE}"
    )
    context: str = Field(
        default="",
        max_length=MEMORY_CONTEXT_MAX_CHARS,
        description="Optional: the message this memory answers (helps find it later).",
    )
    namespace: Namespace | None = Field(default=None, description=NAMESPACE_HELP)
    subject: Subject | None = Field(
        default=None,
        description="Optional: the end user this is about (your app's user id); erased with them.",
    )
    task_id: int | None = Field(
        default=None,
        ge=1,
        description=(
            "For a 'working' note of the task you are on: read only when you name the task, "
            "archived when it ends."
        ),
    )


class UpdateMemoryArgs(ToolArguments):
    id: UUID = Field(description="The id of the memory to change.")
    content: str | None = Field(
        default=None, min_length=1, max_length=MEMORY_CONTENT_MAX_CHARS, description="New text."
    )
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS, description="New tags.")
    category: Category | None = Field(default=None, description="New category.")


class ForgetMemoryArgs(DestructiveArguments):
    id: UUID = Field(description="The id of the memory to delete for good.")


class ContextArgs(ToolArguments):
    query: str = Field(
        min_length=1, max_length=4000, description="What you are about to do or answer."
    )
    token_budget: int = Field(
        default=800, ge=0, le=100_000, description="Tokens the returned messages may use."
    )
    include_org: bool = Field(
        default=True, description="Include the company's core policies and relevant org facts."
    )
    subject: Subject | None = Field(
        default=None, description="Only memories about this end user (your app's user id)."
    )
    task_id: int | None = Field(
        default=None,
        ge=1,
        description="The task you are working on: its working notes are included too.",
    )


class PublishSharedArgs(ToolArguments):
    content: str = Field(
        min_length=1,
        max_length=MEMORY_CONTENT_MAX_CHARS,
        description="Knowledge every agent of the company should be able to find.",
    )
    category: Category = Field(default="semantic", description="The memory category.")
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, description="Labels.")


class SearchSharedArgs(ToolArguments):
    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    limit: int = Field(default=5, ge=1, le=50, description="How many entries to return.")
    exclude_self: bool = Field(default=False, description="Leave out what you published.")


class RetractSharedArgs(DestructiveArguments):
    id: UUID = Field(description="The id of shared knowledge you published.")


class EndSessionArgs(DestructiveArguments):
    session_id: str = Field(
        min_length=1, max_length=200, description="The session whose memories to purge."
    )


class RequestDreamArgs(ToolArguments):
    """No arguments: the dream is of the calling agent."""


# --- handlers -------------------------------------------------------------------------


def _query(args, *, limit: int, categories=None, namespaces=()) -> MemoryQuery:
    fields = {"text": args.query, "limit": limit, "namespaces": namespaces}
    if getattr(args, "task_id", None) is not None:
        fields["task_id"] = args.task_id
    if categories:
        fields["categories"] = tuple(categories)
    if getattr(args, "subject", None) is not None:
        fields["subject"] = args.subject
    return parse_request(MemoryQuery, fields)


def search_memory(ctx: ToolContext, args: SearchMemoryArgs) -> ToolResult:
    service = service_for(ctx)
    namespaces = service.namespaces(args.namespaces or ())
    result = service.tool_search(
        _query(args, limit=args.limit, categories=args.categories, namespaces=namespaces)
    )
    data = hits_payload(result.hits, result.degraded, result.reembedding)
    data["queries"] = result.queries
    if result.reranked is not None:
        data["reranked"] = result.reranked
    return ToolResult(hits_text(result.hits, empty="No memories match."), data)


def recall_memory(ctx: ToolContext, args: RecallMemoryArgs) -> ToolResult:
    memory = service_for(ctx).recall(args.id)
    data = json_ready(s.MemorySerializer(memory).data)
    return ToolResult(
        f"[{memory.pk}] ({memory.category}, {memory.created_at:%Y-%m-%d}) {memory.content}", data
    )


def _store_request(args, service=None, **extra) -> MemoryStoreRequest:
    fields = {k: v for k, v in args.model_dump().items() if v is not None and v != ""}
    if "namespace" in fields:
        fields["namespace"] = service.namespace(fields["namespace"])
    return parse_request(MemoryStoreRequest, {**fields, **extra})


def store_memory(ctx: ToolContext, args: StoreMemoryArgs) -> ToolResult:
    service = service_for(ctx)
    result = service.store(_store_request(args, service))
    return ToolResult(store_text(result), store_payload(result))


def update_memory(ctx: ToolContext, args: UpdateMemoryArgs) -> ToolResult:
    changes = args.model_dump(exclude={"id"}, exclude_none=True)
    request = parse_request(MemoryUpdateRequest, changes)
    memory = service_for(ctx).update(args.id, request)
    return ToolResult(f"Memory {memory.pk} updated.", json_ready(s.MemorySerializer(memory).data))


def forget_memory(ctx: ToolContext, args: ForgetMemoryArgs) -> ToolResult:
    service_for(ctx).delete(args.id, confirmation=ctx.confirmation)
    return ToolResult(f"Memory {args.id} deleted.", {"id": str(args.id), "deleted": True})


def get_memory_context(ctx: ToolContext, args: ContextArgs) -> ToolResult:
    service = service_for(ctx)
    prepared = service.context(
        ContextRequest.build(
            query_text=args.query,
            token_budget=args.token_budget,
            include_org=args.include_org,
            subject=args.subject,
            task_id=args.task_id,
        )
    )
    data = json_ready(s.MemoryContextSerializer(prepared).data)
    data["strategy"] = service.strategy.strategy_name
    text = "\n\n".join(message["content"] for message in prepared.messages)
    text = text or "No memory context for this query."
    return ToolResult(" ".join([text, *(w["message"] for w in prepared.warnings)]), data)


def publish_shared_knowledge(ctx: ToolContext, args: PublishSharedArgs) -> ToolResult:
    result = service_for(ctx).shared_publish(_store_request(args))
    return ToolResult(store_text(result, "Shared knowledge"), store_payload(result))


def search_shared_knowledge(ctx: ToolContext, args: SearchSharedArgs) -> ToolResult:
    result = service_for(ctx).shared_search(
        _query(args, limit=args.limit), exclude_self=args.exclude_self
    )
    return ToolResult(
        hits_text(result.hits, empty="No shared knowledge matches."),
        hits_payload(result.hits, result.degraded, result.reembedding),
    )


def retract_shared_knowledge(ctx: ToolContext, args: RetractSharedArgs) -> ToolResult:
    service_for(ctx).shared_retract(args.id, confirmation=ctx.confirmation)
    return ToolResult(
        f"Shared knowledge {args.id} retracted.", {"id": str(args.id), "retracted": True}
    )


def end_session(ctx: ToolContext, args: EndSessionArgs) -> ToolResult:
    purged = service_for(ctx).session_end(args.session_id, confirmation=ctx.confirmation)
    return ToolResult(
        f"Session {args.session_id} ended; {purged} session memories purged.",
        {"session_id": args.session_id, "memories_purged": purged},
    )


DREAM_QUEUED = {
    "llm": "Dream {id} queued: the LLM will consolidate your journal into your core memory.",
    "extractive": (
        "Dream {id} queued. No LLM is configured, so it runs the extractive dream: your core "
        "memory becomes the key facts and anchors of your previous core and your journal, "
        "kept verbatim."
    ),
}


def request_dream(ctx: ToolContext, args: RequestDreamArgs) -> ToolResult:
    dream = service_for(ctx).dream_request()
    data = json_ready(DreamRequestSerializer(dream).data)
    return ToolResult(DREAM_QUEUED[dream.method].format(id=dream.pk), data)


MEMORY_TOOLS = (
    ToolSpec(
        "search_memory",
        "Search your long-term memory (and the company's shared knowledge) with hybrid "
        "keyword + semantic search. Returns the best matches with their ids; use "
        "recall_memory(id) to read one in full.",
        SearchMemoryArgs,
        search_memory,
    ),
    ToolSpec(
        "recall_memory",
        "Read one memory in full by its id (from search_memory): yours, or shared knowledge "
        "of your company.",
        RecallMemoryArgs,
        recall_memory,
    ),
    ToolSpec(
        "store_memory",
        "Remember something for later: a fact, decision, lesson or event worth keeping. "
        "Near-duplicates of what you already remember are not stored twice. "
        + NON_INFERABLE_GUIDANCE,
        StoreMemoryArgs,
        store_memory,
    ),
    ToolSpec(
        "update_memory",
        "Change a memory you stored (its text, tags or category) when it is out of date.",
        UpdateMemoryArgs,
        update_memory,
    ),
    ToolSpec(
        "forget_memory",
        "Delete one of your memories for good (when it is wrong or must not be kept). "
        "Requires confirm: true and a reason; the deletion is audited.",
        ForgetMemoryArgs,
        forget_memory,
    ),
    ToolSpec(
        "get_memory_context",
        "Get ready-to-use prompt messages with what you know that is relevant to a task: "
        "company policies plus your most relevant memories, within a token budget.",
        ContextArgs,
        get_memory_context,
    ),
    ToolSpec(
        "publish_shared_knowledge",
        "Publish knowledge every agent of your company can find. Only you can retract it.",
        PublishSharedArgs,
        publish_shared_knowledge,
        group="shared",
    ),
    ToolSpec(
        "search_shared_knowledge",
        "Search the knowledge the agents of your company have published.",
        SearchSharedArgs,
        search_shared_knowledge,
        group="shared",
    ),
    ToolSpec(
        "retract_shared_knowledge",
        "Retract shared knowledge you published. Requires confirm: true and a reason.",
        RetractSharedArgs,
        retract_shared_knowledge,
        group="shared",
    ),
    ToolSpec(
        "request_dream",
        "Ask for a deep dream now: your recent journal is consolidated into your core memory "
        "in the background (results in your dream diary). Rate-limited per agent and per "
        "company; a refusal says when to retry.",
        RequestDreamArgs,
        request_dream,
    ),
    ToolSpec(
        "end_session",
        "End a session: purge your session-level memories of it. Requires confirm: true and "
        "a reason.",
        EndSessionArgs,
        end_session,
    ),
)


def register_memory_tools() -> None:
    for spec in (*MEMORY_TOOLS, *SELF_EDITING_TOOLS, *PROCEDURAL_TOOLS):
        register_tool(spec)
