"""Org-memory value objects (pure: no Django import).

Frozen pydantic models mirroring the spec's ``OrgFactAuthor``, ``OrgFact``,
``OrgFactWriteRequest`` and ``OrgMemoryQuery``. Persisted state lives in
:mod:`orgmemory.models`; these are what services, selectors and the backend exchange.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from synthorg.enums import AutonomyLevel, OrgFactCategory, SeniorityLevel

NotBlankStr = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]

FACT_CONTENT_MAX_CHARS = 20_000
MAX_TAGS = 32

_FROZEN = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")


class OrgFactAuthor(BaseModel):
    """Who writes a fact: a human operator, or an agent with its seniority at write time."""

    model_config = _FROZEN

    agent_id: NotBlankStr | None = None
    seniority: SeniorityLevel | None = None
    autonomy_level: AutonomyLevel | None = None
    #: the agent's role and department at write time (what ``allowed_roles`` and
    #: ``allowed_departments`` match); empty for a human
    role: str = ""
    department: str = ""
    is_human: bool = False

    @model_validator(mode="after")
    def _validate_author_consistency(self) -> OrgFactAuthor:
        if self.is_human:
            if self.agent_id is not None or self.seniority is not None:
                raise ValueError("a human author has no agent_id or seniority")
            if self.autonomy_level is not None or self.role or self.department:
                raise ValueError("a human author has no autonomy_level, role or department")
        elif self.agent_id is None or self.seniority is None:
            raise ValueError("an agent author needs agent_id and seniority")
        return self


class OrgFactWriteRequest(BaseModel):
    """What to write: the fact's content, category and tags."""

    model_config = _FROZEN

    content: Annotated[NotBlankStr, Field(max_length=FACT_CONTENT_MAX_CHARS)]
    category: OrgFactCategory
    tags: tuple[Tag, ...] = Field(default=(), max_length=MAX_TAGS)


class OrgMemoryQuery(BaseModel):
    """Which facts to retrieve: by relevance to ``context`` (or most recent without one)."""

    model_config = _FROZEN

    context: NotBlankStr | None = None
    categories: frozenset[OrgFactCategory] | None = None
    # None: the company's ``max_retrieved_per_query``, which also caps any larger value.
    limit: int | None = Field(default=None, ge=1, le=100)
    as_of: AwareDatetime | None = None


class OrgFact(BaseModel):
    """One fact as it stands (now, or at a queried time), with its retrieval score."""

    model_config = _FROZEN

    id: NotBlankStr
    content: NotBlankStr
    category: OrgFactCategory
    tags: tuple[NotBlankStr, ...] = ()
    author: OrgFactAuthor
    created_at: datetime
    version: int = 1
    updated_at: datetime | None = None
    score: float | None = None
