"""Value objects of conversation ingestion (frozen pydantic; no Django import).

``MessageIn`` is one message a writer (REST flush, tools, MCP, benchmark) hands to
``conversation_messages_append``; ``FlushResult`` is what it gets back; ``ProposedFacts``
is the JSON contract the extraction LLM must answer with.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

CONVERSATION_ID_MAX_CHARS = 200  # mirrors memory.ingestion.models (kept Django-free here)
MESSAGE_CONTENT_MAX_CHARS = 100_000
MESSAGE_NAME_MAX_CHARS = 200
MAX_FLUSH_MESSAGES = 500
FACT_CONTENT_MAX_CHARS = 2000

CONTENT_BLANK = "content must not be blank."

_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class MessageIn(BaseModel):
    model_config = _FROZEN

    role: MessageRole
    content: str = Field(min_length=1, max_length=MESSAGE_CONTENT_MAX_CHARS)
    name: str = Field(default="", max_length=MESSAGE_NAME_MAX_CHARS)
    created_at: AwareDatetime | None = None

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(CONTENT_BLANK)
        return value


class FlushResult(BaseModel):
    model_config = _FROZEN

    conversation_id: str
    stored: bool
    accepted: int
    message_ids: tuple[int, ...] = ()
    first_seq: int | None = None
    last_seq: int | None = None
    extraction_due_at: datetime | None = None
    subject: str | None = None  # the conversation's end user


# --- the extraction contract --------------------------------------------------------------

FactCategory = Literal["episodic", "semantic", "procedural", "social"]


class ProposedFact(BaseModel):
    """One fact as the LLM proposes it. Unknown keys are ignored (providers add some)."""

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)

    content: str = Field(min_length=1, max_length=FACT_CONTENT_MAX_CHARS)
    category: FactCategory
    confidence: float = Field(ge=0.0, le=1.0)
    tags: tuple[str, ...] = Field(default=(), max_length=16)
    supersedes: tuple[str, ...] = Field(default=(), max_length=50)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError(CONTENT_BLANK)
        return value

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for tag in value:
            tag = tag.strip().lower()[:64]
            if tag:
                seen.setdefault(tag, None)
        return tuple(seen)


class ProposedFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    facts: tuple[ProposedFact, ...] = Field(max_length=200)


def parse_uuid(value: str) -> UUID | None:
    try:
        return UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


EXTRACTION_JSON_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["facts"],
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["content", "category", "confidence", "tags", "supersedes"],
                "properties": {
                    "content": {"type": "string"},
                    "category": {
                        "type": "string",
                        "enum": ["episodic", "semantic", "procedural", "social"],
                    },
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "supersedes": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}
