"""``MemoryQuery``: what a caller asks the search pipeline for (frozen pydantic; pure)."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from synthorg.enums import MemoryCategory
from synthorg.subjects import validate_subject

MAX_LIMIT = 1000
TEXT_MAX_CHARS = 4000

SINCE_NOT_BEFORE_UNTIL = "since must be earlier than until."
TAG_BLANK = "tags must not contain blank values."
NAMESPACE_BLANK = "namespaces must not contain blank values."


class MemoryQuery(BaseModel):
    """Search parameters.

    ``text`` absent (or blank) means a metadata-only listing, newest first. ``tags`` are ANDed;
    ``since`` is inclusive and ``until`` exclusive on ``created_at``. ``min_relevance`` (when
    set) replaces the company's ``memory.retrieval.min_relevance`` for this query.
    ``task_id`` adds the working memories scoped to that task to what is searched; without
    it no task-scoped memory is.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    text: str | None = Field(default=None, max_length=TEXT_MAX_CHARS)
    namespaces: tuple[str, ...] = ()
    categories: tuple[MemoryCategory, ...] = ()
    tags: tuple[str, ...] = ()
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    task_id: int | None = Field(default=None, ge=1)
    #: only memories about this end user (:mod:`synthorg.subjects`); ``None``: any
    subject: str | None = None

    @field_validator("subject")
    @classmethod
    def _subject_valid(cls, value: str | None) -> str | None:
        return None if value is None else validate_subject(value)

    @field_validator("text")
    @classmethod
    def _blank_text_is_listing(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return value.strip()

    @field_validator("tags")
    @classmethod
    def _normalise_tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Stored tags are stripped and lower-cased (memory.core.domain.normalise_tags).
        tags = [tag.strip().lower() for tag in value]
        if any(not tag for tag in tags):
            raise ValueError(TAG_BLANK)
        return tuple(dict.fromkeys(tags))

    @field_validator("namespaces")
    @classmethod
    def _strip_namespaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        names = [name.strip() for name in value]
        if any(not name for name in names):
            raise ValueError(NAMESPACE_BLANK)
        return tuple(dict.fromkeys(names))

    @field_validator("categories")
    @classmethod
    def _unique_categories(cls, value: tuple[MemoryCategory, ...]) -> tuple[MemoryCategory, ...]:
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _window(self) -> MemoryQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError(SINCE_NOT_BEFORE_UNTIL)
        return self
