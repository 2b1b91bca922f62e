"""What every memory tool handler uses: the service for the caller, the session/project
binding arguments, and the text and payload a search answers with."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory.interfaces.api import serializers as s
from memory.interfaces.service import MemoryService
from synthorg.text import clip
from synthorg.tools import ToolArguments, ToolContext, json_ready

Category = Literal["working", "episodic", "semantic", "procedural", "social"]
EXCERPT = 400


def hits_payload(hits, degraded, reembedding: dict | None = None) -> dict:
    """The REST search response's shape (``reembedding``: a running job's progress)."""
    payload = s.search_payload(hits, degraded, reembedding)
    return json_ready(s.SearchResponseSerializer(payload).data)


def hits_text(hits, *, empty: str) -> str:
    if not hits:
        return empty
    lines = []
    for hit in hits:
        memory = hit.memory
        text = clip(memory.content, EXCERPT + 1)
        shared = ", shared" if hit.is_shared else ""
        lines.append(
            f"- [{memory.pk}] ({memory.category}{shared}, {memory.created_at:%Y-%m-%d}, "
            f"score {hit.combined:.2f}) {text}"
        )
    return "\n".join(lines)


def store_text(result, what: str = "Memory") -> str:
    if not result.stored:
        return "Not stored: this agent's memory level is 'none'."
    if result.deduplicated:
        text = f"Already known: {what.lower()} {result.id} says the same; nothing new stored."
    else:
        text = f"{what} stored with id {result.id}."
    return " ".join([text, *(warning["message"] for warning in result.warnings)])


def store_payload(result) -> dict:
    """The REST store response's shape (``warnings`` only when there are any)."""
    return json_ready(s.StoreResultSerializer(result.model_dump()).data)


def service_for(ctx: ToolContext) -> MemoryService:
    return MemoryService(ctx.principal, via=ctx.via)


class BindingArgs(ToolArguments):
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
