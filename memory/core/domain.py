"""Value objects of agent memory (frozen pydantic; no Django import).

``MemoryStoreRequest`` is what every writer (REST API, backend protocol, benchmark ingest)
hands to ``memory.core.services.store``; ``StoreResult`` is what it gets back; ``MemoryEntry`` is
the seeds' read model the backend protocol returns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memory.core.errors import MemoryInputError
from synthorg.enums import MemoryCategory
from synthorg.subjects import validate_subject

#: The tag of an agent's core memory (self-editing core blocks, the dream's core summary):
#: the per-agent cap never removes a live core memory.
CORE_TAG = "core"
MEMORY_CONTENT_MAX_CHARS = 20_000  # mirrors memory.core.models.memory (kept Django-free here)
MEMORY_CONTEXT_MAX_CHARS = 4_000
NAMESPACE_MAX_CHARS = 100
SOURCE_MAX_CHARS = 200
SESSION_ID_MAX_CHARS = 200
TAG_MAX_CHARS = 64
MAX_TAGS = 32
MAX_SUPERSEDES = 50
MAX_BATCH = 500

CONTENT_BLANK = "content must not be blank."
NAMESPACE_BLANK = "namespace must not be blank."
TAG_BLANK = "tags must not contain blank values."
TAG_TOO_LONG = f"each tag is at most {TAG_MAX_CHARS} characters."
TOO_MANY_TAGS = f"at most {MAX_TAGS} distinct tags."
CONFIDENCE_NOT_FINITE = "confidence must be a finite number between 0 and 1."
CREATED_AT_FUTURE = "created_at may only be in the past (it is for importing old memories)."
EXPIRES_BEFORE_CREATED = "expires_at must be later than created_at."
SESSION_ID_BLANK = "session_id must not be blank."

_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, str_strip_whitespace=False)


def normalise_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Strip, lower-case and de-duplicate ``tags``, keeping first-seen order."""
    seen: dict[str, None] = {}
    for raw in tags:
        tag = raw.strip().lower()
        if not tag:
            raise ValueError(TAG_BLANK)
        if len(tag) > TAG_MAX_CHARS:
            raise ValueError(TAG_TOO_LONG)
        seen.setdefault(tag, None)
    if len(seen) > MAX_TAGS:
        raise ValueError(TOO_MANY_TAGS)
    return tuple(seen)


class MemoryStoreRequest(BaseModel):
    """One memory to store. ``session_id``/``project_id`` bind it to the agent's level."""

    model_config = _FROZEN

    content: str = Field(min_length=1, max_length=MEMORY_CONTENT_MAX_CHARS)
    category: MemoryCategory
    namespace: str = Field(default="default", min_length=1, max_length=NAMESPACE_MAX_CHARS)
    context: str = Field(default="", max_length=MEMORY_CONTEXT_MAX_CHARS)
    source: str = Field(default="", max_length=SOURCE_MAX_CHARS)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    tags: tuple[str, ...] = ()
    expires_at: AwareDatetime | None = None
    created_at: AwareDatetime | None = None  # past-only; for imports
    session_id: str | None = Field(default=None, max_length=SESSION_ID_MAX_CHARS)
    project_id: int | None = Field(default=None, ge=1)
    #: scopes a ``working`` memory to a live task of the agent's company
    task_id: int | None = Field(default=None, ge=1)
    supersedes: tuple[UUID, ...] = Field(default=(), max_length=MAX_SUPERSEDES)
    #: the end user the memory is about (:mod:`synthorg.subjects`); ``None``: nobody
    subject: str | None = None

    @field_validator("subject")
    @classmethod
    def _subject_valid(cls, value: str | None) -> str | None:
        return None if value is None else validate_subject(value)

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(CONTENT_BLANK)
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace_not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError(NAMESPACE_BLANK)
        return value

    @field_validator("session_id")
    @classmethod
    def _session_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError(SESSION_ID_BLANK)
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _normalise_tags(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return normalise_tags(value)
        return value

    @field_validator("confidence")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(CONFIDENCE_NOT_FINITE)
        return value

    @field_validator("supersedes", mode="after")
    @classmethod
    def _unique_supersedes(cls, value: tuple[UUID, ...]) -> tuple[UUID, ...]:
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _times(self) -> MemoryStoreRequest:
        created, expires = self.created_at, self.expires_at
        if created is not None and expires is not None and expires <= created:
            raise ValueError(EXPIRES_BEFORE_CREATED)
        return self

    def embedding_text(self) -> str:
        return embedding_text(self.content, self.context)


class MemoryUpdateRequest(BaseModel):
    """A partial change to a memory (PATCH). Unset fields stay as they are."""

    model_config = _FROZEN

    content: str | None = Field(default=None, min_length=1, max_length=MEMORY_CONTENT_MAX_CHARS)
    context: str | None = Field(default=None, max_length=MEMORY_CONTEXT_MAX_CHARS)
    category: MemoryCategory | None = None
    namespace: str | None = Field(default=None, min_length=1, max_length=NAMESPACE_MAX_CHARS)
    source: str | None = Field(default=None, max_length=SOURCE_MAX_CHARS)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    tags: tuple[str, ...] | None = None
    expires_at: AwareDatetime | None = None

    _content_not_blank = field_validator("content")(
        lambda value: MemoryStoreRequest._content_not_blank(value) if value is not None else None
    )
    _namespace_not_blank = field_validator("namespace")(
        lambda value: MemoryStoreRequest._namespace_not_blank(value) if value is not None else None
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _normalise_tags(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return normalise_tags(value)
        return value

    def changes(self) -> dict[str, Any]:
        """The fields the caller set (``expires_at: null`` clears the expiry)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class StoreResult(BaseModel):
    """Outcome of one store: a new row, an existing near-duplicate, or nothing (level none)."""

    model_config = ConfigDict(frozen=True)

    id: UUID | None
    stored: bool
    deduplicated: bool
    embedding_status: str | None
    #: advisory ``{code, message}`` entries (e.g. a missing ``non-inferable`` tag); never
    #: a refusal
    warnings: tuple[dict[str, str], ...] = ()


class MemoryMetadata(BaseModel):
    model_config = _FROZEN

    source: str | None = None
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    tags: tuple[str, ...] = ()


class MemoryEntry(BaseModel):
    """The seeds' read model of one memory, as the backend protocol returns it."""

    model_config = _FROZEN

    id: str
    agent_id: str
    namespace: str
    category: MemoryCategory
    content: str
    metadata: MemoryMetadata
    created_at: datetime
    updated_at: datetime | None = None
    expires_at: datetime | None = None
    relevance_score: float | None = None


def embedding_text(content: str, context: str = "") -> str:
    """What the dense leg embeds: the content, followed by its context when there is one."""
    return f"{content}\n{context}" if context else content


def parse_request(model: type[BaseModel], data: Mapping[str, Any], *, prefix: str = ""):
    """Build ``model`` from ``data``; a pydantic error becomes a 400 naming each field."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            loc = ".".join(str(part) for part in error["loc"])
            field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
            message = error["msg"].removeprefix("Value error, ")
            errors.append({"field": field, "message": message, "code": error["type"]})
        first = errors[0]
        where = f"{first['field']}: " if first["field"] else ""
        raise MemoryInputError(
            f"{where}{first['message']}", code="validation_error", errors=errors
        ) from None
