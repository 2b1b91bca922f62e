"""Domain enumerations shared by every app (pure: no Django import)."""

from __future__ import annotations

from enum import StrEnum


class SeniorityLevel(StrEnum):
    """Agent seniority, ordered from least to most senior."""

    JUNIOR = "junior"
    MID = "mid"
    SENIOR = "senior"
    LEAD = "lead"
    PRINCIPAL = "principal"
    DIRECTOR = "director"
    VP = "vp"
    C_SUITE = "c_suite"

    @property
    def rank(self) -> int:
        return _SENIORITY_ORDER.index(self)

    def at_least(self, other: SeniorityLevel) -> bool:
        return self.rank >= other.rank


_SENIORITY_ORDER: tuple[SeniorityLevel, ...] = tuple(SeniorityLevel)


class AutonomyLevel(StrEnum):
    FULL = "full"
    SEMI = "semi"
    SUPERVISED = "supervised"
    LOCKED = "locked"


class MemoryLevel(StrEnum):
    """How long an agent's memories persist."""

    PERSISTENT = "persistent"
    PROJECT = "project"
    SESSION = "session"
    NONE = "none"


class MemoryCategory(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    SOCIAL = "social"


class OrgFactCategory(StrEnum):
    CORE_POLICY = "core_policy"
    ADR = "adr"
    PROCEDURE = "procedure"
    CONVENTION = "convention"
    ENTITY_DEFINITION = "entity_definition"


class ConsolidationInterval(StrEnum):
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    NEVER = "never"


def labelled_choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    """``(value, "Title Case")`` pairs, the form Django model/serializer choices use."""
    return [(member.value, member.value.replace("_", " ").title()) for member in enum]


MEMORY_CATEGORY_CHOICES = labelled_choices(MemoryCategory)
ORG_FACT_CATEGORY_CHOICES = labelled_choices(OrgFactCategory)
