"""``org_memory:``: core policies, the extended store and per-category write rules."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, Field, field_serializer, field_validator

from synthorg.company_config.fields import FROZEN, NotBlankStr
from synthorg.enums import OrgFactCategory, SeniorityLevel


class CategoryWriteRule(BaseModel):
    model_config = FROZEN

    allowed_seniority: SeniorityLevel | None = None
    human_allowed: bool = True


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


class WriteAccessConfig(BaseModel):
    """Per-category write rules. A category with no rule denies everyone."""

    model_config = FROZEN

    rules: Mapping[OrgFactCategory, CategoryWriteRule] = Field(default_factory=_default_write_rules)

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


class ExtendedStoreConfig(BaseModel):
    model_config = FROZEN

    backend: Literal["postgresql", "sqlite"] = "postgresql"
    max_retrieved_per_query: int = Field(default=5, ge=1, le=100)


class OrgMemoryConfig(BaseModel):
    model_config = FROZEN

    backend: Literal["hybrid_prompt_retrieval"] = "hybrid_prompt_retrieval"
    core_policies: tuple[NotBlankStr, ...] = ()
    extended_store: ExtendedStoreConfig = Field(default_factory=ExtendedStoreConfig)
    write_access: WriteAccessConfig = Field(default_factory=WriteAccessConfig)
