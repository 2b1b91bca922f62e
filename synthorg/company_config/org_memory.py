"""``org_memory:``: core policies, the extended store and per-category write rules."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import (
    BaseModel,
    Field,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from synthorg.company_config.fields import (
    FROZEN,
    ConfigFieldError,
    NotBlankStr,
    refuse_not_offered,
)
from synthorg.enums import AutonomyLevel, OrgFactCategory, SeniorityLevel

#: What an agent's ``autonomy_level`` ranks, least to most autonomous (``min_autonomy``).
AUTONOMY_ORDER: tuple[AutonomyLevel, ...] = (
    AutonomyLevel.LOCKED,
    AutonomyLevel.SUPERVISED,
    AutonomyLevel.SEMI,
    AutonomyLevel.FULL,
)
AGENT_DIMENSIONS = ("allowed_roles", "allowed_departments", "min_autonomy")
AGENT_DIMENSION_NO_AGENTS = (
    "narrows which agents may write, but allowed_seniority is null so no agent may write "
    "this category and it would change nothing; set allowed_seniority or remove it"
)
MAX_NAMES = 50


class CategoryWriteRule(BaseModel):
    """One category's rule. An agent may write when its seniority is at least
    ``allowed_seniority`` and — each only when set — its role is one of ``allowed_roles``,
    its department one of ``allowed_departments`` (both compared case-insensitively, spaces
    trimmed) and its autonomy at least ``min_autonomy`` (locked < supervised < semi < full).
    """

    model_config = FROZEN

    allowed_seniority: SeniorityLevel | None = None
    human_allowed: bool = True
    allowed_roles: tuple[NotBlankStr, ...] = Field(default=(), max_length=MAX_NAMES)
    allowed_departments: tuple[NotBlankStr, ...] = Field(default=(), max_length=MAX_NAMES)
    min_autonomy: AutonomyLevel | None = None

    @model_validator(mode="after")
    def _agent_dimensions_need_agents(self) -> CategoryWriteRule:
        if self.allowed_seniority is None:
            for name in AGENT_DIMENSIONS:
                if getattr(self, name):
                    raise ConfigFieldError(name, AGENT_DIMENSION_NO_AGENTS)
        return self

    @model_serializer(mode="wrap")
    def _omit_unset_dimensions(self, handler):
        # A rule without the agent dimensions keeps the seeds' two-field shape.
        data = handler(self)
        for name in AGENT_DIMENSIONS:
            if not getattr(self, name):
                data.pop(name, None)
        return data


def _default_write_rules() -> Mapping[OrgFactCategory, CategoryWriteRule]:
    senior = CategoryWriteRule(allowed_seniority=SeniorityLevel.SENIOR, human_allowed=True)
    return MappingProxyType(
        {
            OrgFactCategory.CORE_POLICY: CategoryWriteRule(
                allowed_seniority=None, human_allowed=True
            ),
            OrgFactCategory.ADR: senior,
            OrgFactCategory.PROCEDURE: senior,
            OrgFactCategory.CONVENTION: senior,
        }
    )


# The seeds' spelling: ``write_access: {policies: ["human"], adrs: ["human", "senior", ...]}``.
SEED_CATEGORY_KEYS: Mapping[str, OrgFactCategory] = MappingProxyType(
    {
        "policies": OrgFactCategory.CORE_POLICY,
        "adrs": OrgFactCategory.ADR,
        "procedures": OrgFactCategory.PROCEDURE,
        "conventions": OrgFactCategory.CONVENTION,
        "entity_definitions": OrgFactCategory.ENTITY_DEFINITION,
    }
)
HUMAN_WRITER = "human"
SEED_NOT_A_LIST = 'must be a list of writers: "human" and/or seniority levels'
SEED_UNKNOWN_WRITER = 'unknown writer {writer!r}: use "human" or one of {levels}'
SEED_GAP = (
    "agents may write from a minimum seniority upward: list every level from {lowest} to "
    "c_suite (missing: {missing})"
)
# The seeds' seniority vocabulary. This service adds principal, director and vp between
# lead and c_suite; a seed list ("senior", "lead", "c_suite") names every seed level from
# its minimum up, and the added levels in that range are included with them.
SEED_LEVELS = (
    SeniorityLevel.JUNIOR,
    SeniorityLevel.MID,
    SeniorityLevel.SENIOR,
    SeniorityLevel.LEAD,
    SeniorityLevel.C_SUITE,
)
SEED_TWICE = "category {category!r} is given both under rules and as {key!r}"
SEED_POLICIES_HUMAN_ONLY = 'core policies are written by humans only: list only "human"'


def _rule_from_writers(key: str, writers: object) -> CategoryWriteRule:
    """``["human", "senior", "lead", ...]`` → the equivalent :class:`CategoryWriteRule`.

    A rule grants agents a minimum seniority and everything above it, so a list with a gap
    in the seeds' levels (``["senior", "c_suite"]``: lead missing) has no equivalent and is
    refused rather than widened.
    """
    if not isinstance(writers, list | tuple) or not all(isinstance(w, str) for w in writers):
        raise ConfigFieldError(key, SEED_NOT_A_LIST)
    levels = list(SeniorityLevel)
    seniorities = []
    for writer in writers:
        if writer == HUMAN_WRITER:
            continue
        if writer not in levels:
            raise ConfigFieldError(
                key,
                SEED_UNKNOWN_WRITER.format(writer=writer, levels=", ".join(levels)),
            )
        seniorities.append(SeniorityLevel(writer))
    lowest = min(seniorities, key=lambda level: level.rank) if seniorities else None
    if lowest is not None:
        missing = [
            level for level in SEED_LEVELS if level.at_least(lowest) and level not in seniorities
        ]
        if missing:
            raise ConfigFieldError(key, SEED_GAP.format(lowest=lowest, missing=", ".join(missing)))
    return CategoryWriteRule(allowed_seniority=lowest, human_allowed=HUMAN_WRITER in writers)


class WriteAccessConfig(BaseModel):
    """Per-category write rules. A category with no rule denies everyone.

    Accepts ``rules`` and the seeds' per-category writer lists (``policies``, ``adrs``,
    ``procedures``, ``conventions``, ``entity_definitions``); both are stored as ``rules``.
    """

    model_config = FROZEN

    rules: Mapping[OrgFactCategory, CategoryWriteRule] = Field(default_factory=_default_write_rules)

    @model_validator(mode="before")
    @classmethod
    def _accept_seed_writer_lists(cls, data: object) -> object:
        if not isinstance(data, Mapping) or not any(key in data for key in SEED_CATEGORY_KEYS):
            return data
        data = dict(data)
        rules = dict(data.get("rules") or {}) if "rules" in data else {}
        for key, category in SEED_CATEGORY_KEYS.items():
            if key not in data:
                continue
            if category in rules or str(category) in rules:
                raise ConfigFieldError(key, SEED_TWICE.format(category=str(category), key=key))
            rule = _rule_from_writers(key, data.pop(key))
            if category == OrgFactCategory.CORE_POLICY and rule.allowed_seniority is not None:
                raise ConfigFieldError(key, SEED_POLICIES_HUMAN_ONLY)
            rules[str(category)] = rule
        data["rules"] = rules
        return data

    @field_validator("rules", mode="after")
    @classmethod
    def _wrap_rules_readonly(
        cls, value: Mapping[OrgFactCategory, CategoryWriteRule]
    ) -> Mapping[OrgFactCategory, CategoryWriteRule]:
        core = value.get(OrgFactCategory.CORE_POLICY)
        if core is not None and core.allowed_seniority is not None:
            raise ValueError("core_policy is human-only: allowed_seniority must be null")
        return MappingProxyType(dict(value))

    @field_serializer("rules")
    def _serialize_rules(
        self, value: Mapping[OrgFactCategory, CategoryWriteRule]
    ) -> dict[str, CategoryWriteRule]:
        return {str(category): rule for category, rule in value.items()}


EXTENDED_STORE_REFUSED = "org facts are stored in PostgreSQL; remove the key or set 'postgresql'"
ORG_BACKEND_REFUSED = (
    "org memory is the core policies in every prompt plus retrieval over the extended store "
    "(hybrid_prompt_retrieval), the one org-memory backend; remove the key or set "
    "'hybrid_prompt_retrieval'"
)


class ExtendedStoreConfig(BaseModel):
    model_config = FROZEN

    backend: Literal["postgresql"] = "postgresql"
    max_retrieved_per_query: int = Field(default=5, ge=1, le=100)

    @model_validator(mode="before")
    @classmethod
    def _refuse_other_stores(cls, data: object) -> object:
        refuse_not_offered(data, "backend", "postgresql", EXTENDED_STORE_REFUSED)
        return data


class OrgMemoryConfig(BaseModel):
    model_config = FROZEN

    backend: Literal["hybrid_prompt_retrieval"] = "hybrid_prompt_retrieval"
    core_policies: tuple[NotBlankStr, ...] = ()
    # The core-policy block is pinned into every prompt and never dropped for budget: the
    # Core policies page warns when it is longer than this many (estimated) tokens.
    core_policies_token_warning: int = Field(default=500, ge=1, le=100_000)
    extended_store: ExtendedStoreConfig = Field(default_factory=ExtendedStoreConfig)
    write_access: WriteAccessConfig = Field(default_factory=WriteAccessConfig)

    @model_validator(mode="before")
    @classmethod
    def _refuse_other_backends(cls, data: object) -> object:
        refuse_not_offered(data, "backend", "hybrid_prompt_retrieval", ORG_BACKEND_REFUSED)
        return data
