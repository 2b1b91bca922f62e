"""Consolidation value objects (frozen pydantic), as in the seed's ``consolidation/models``."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, model_validator

from synthorg.enums import MemoryCategory

_FROZEN = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")


class ArchivalMode(StrEnum):
    """Why an entry left the hot store and how its information is kept there (a
    consolidated entry's summary mode, or none).

    The archive itself always keeps the entry's full original content.
    """

    ABSTRACTIVE = "abstractive"  # an LLM-written summary (sparse, conversational content)
    EXTRACTIVE = "extractive"  # verbatim facts, anchors or truncated excerpts (dense content)
    PRUNED = "pruned"  # removed by procedural pruning: no summary, restorable from the archive
    # Removed by maintenance without a summary, restorable from the archive:
    RETENTION = "retention"  # past its category's retention days (action ``archive``)
    EXPIRED = "expired"  # past its ``expires_at``
    CAPPED = "capped"  # the oldest beyond ``max_memories_per_agent``


class ContentDensity(StrEnum):
    SPARSE = "sparse"
    DENSE = "dense"


class ConsolidationEntry(BaseModel):
    """The part of a memory a strategy needs."""

    model_config = _FROZEN

    id: UUID
    namespace: str
    category: MemoryCategory
    content: str
    created_at: datetime
    confidence: float = 1.0


class ArchivalModeAssignment(BaseModel):
    model_config = _FROZEN

    original_id: UUID
    mode: ArchivalMode


class ArchivalIndexEntry(BaseModel):
    """Original memory id → archive id, for deterministic restore without search."""

    model_config = _FROZEN

    original_id: UUID
    archival_id: UUID
    mode: ArchivalMode


class ConsolidationResult(BaseModel):
    model_config = _FROZEN

    removed_ids: tuple[UUID, ...] = ()
    summary_ids: tuple[UUID, ...] = ()
    archived_count: int = 0
    mode_assignments: tuple[ArchivalModeAssignment, ...] = ()
    archival_index: tuple[ArchivalIndexEntry, ...] = ()

    @model_validator(mode="after")
    def _validate_archival_consistency(self) -> ConsolidationResult:
        if self.archived_count != len(self.archival_index):
            raise ValueError("archived_count must equal the number of archival_index entries")
        removed = set(self.removed_ids)
        if any(entry.original_id not in removed for entry in self.archival_index):
            raise ValueError("every archived entry must be one of removed_ids")
        return self

    @property
    def consolidated_count(self) -> int:
        return len(self.removed_ids)

    @property
    def summary_id(self) -> UUID | None:
        return self.summary_ids[-1] if self.summary_ids else None


class ArchivalEntry(BaseModel):
    """An archived memory as the :class:`ArchivalStore` protocol passes it around."""

    model_config = _FROZEN

    original_id: UUID
    agent_id: int
    namespace: str = "default"
    content: str
    category: MemoryCategory
    metadata: dict = {}
    created_at: datetime
    archived_at: datetime
    archival_mode: ArchivalMode

    @model_validator(mode="after")
    def _validate_temporal_order(self) -> ArchivalEntry:
        if self.archived_at < self.created_at:
            raise ValueError("archived_at must not be before created_at")
        if not self.content.strip():
            raise ValueError("content must not be blank")
        return self
