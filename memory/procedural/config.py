"""``memory.procedural``: lesson capture, pruning and propagation, and
``memory.consolidation.experience_compressor`` / ``memory.consolidation.wiki_export``: the
two-tier experiences (the company-config sections this app registers; the skill evolver adds
``memory.procedural.evolver``, :mod:`memory.procedural.evolver.config`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from synthorg.company_config.fields import (
    FROZEN,
    ConfigFieldError,
    NotBlankStr,
    refuse_unless,
    reject_unsafe_path,
)
from synthorg.company_config.sections import ConfigSection


class CaptureConfig(BaseModel):
    """When an execution report becomes a proposer call (``capture: hybrid`` is shorthand)."""

    model_config = FROZEN

    type: Literal["failure", "success", "hybrid"] = "failure"
    min_quality_score: float = Field(default=8.0, ge=0.0, le=10.0)
    success_quality_percentile: float = Field(default=75.0, ge=0.0, le=100.0)
    # How many of the agent's most recent scored reports the percentile is taken over.
    percentile_window: int = Field(default=50, ge=1, le=10_000)

    @model_validator(mode="after")
    def _success_knobs_need_success_capture(self) -> CaptureConfig:
        # the failure path fires on every failed report: the scores decide nothing there
        refuse_unless(self, self.type != "failure", "type is 'success' or 'hybrid'", skip=("type",))
        return self


class ProceduralPruningConfig(BaseModel):
    model_config = FROZEN

    strategy: Literal["none", "ttl", "pareto", "hybrid"] = "hybrid"
    max_age_days: int = Field(default=90, ge=1)
    max_entries: int = Field(default=100, ge=1)

    @model_validator(mode="after")
    def _knobs_need_their_strategy(self) -> ProceduralPruningConfig:
        ttl = self.strategy in ("ttl", "hybrid")
        pareto = self.strategy in ("pareto", "hybrid")
        refuse_unless(self, ttl, "strategy is 'ttl' or 'hybrid'", fields=("max_age_days",))
        refuse_unless(self, pareto, "strategy is 'pareto' or 'hybrid'", fields=("max_entries",))
        return self


class ProceduralPropagationConfig(BaseModel):
    model_config = FROZEN

    strategy: Literal["none", "role", "department"] = "none"
    max_propagation_targets: int = Field(default=10, ge=0, le=1000)

    @model_validator(mode="after")
    def _targets_need_a_strategy(self) -> ProceduralPropagationConfig:
        refuse_unless(
            self, self.strategy != "none", "strategy is 'role' or 'department'", skip=("strategy",)
        )
        return self


def _shorthand(field: str):
    def expand(value: Any) -> Any:
        return {field: value} if isinstance(value, str) else value

    return expand


class ProceduralMemoryConfig(BaseModel):
    model_config = FROZEN

    enabled: bool = True
    model: NotBlankStr = "example-small-001"
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1500, ge=1, le=32_000)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    skill_md_directory: NotBlankStr | None = None
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    pruning: ProceduralPruningConfig = Field(default_factory=ProceduralPruningConfig)
    propagation: ProceduralPropagationConfig = Field(default_factory=ProceduralPropagationConfig)

    _capture_shorthand = field_validator("capture", mode="before")(_shorthand("type"))
    _pruning_shorthand = field_validator("pruning", mode="before")(_shorthand("strategy"))
    _propagation_shorthand = field_validator("propagation", mode="before")(_shorthand("strategy"))

    @model_validator(mode="after")
    def _reject_traversal(self) -> ProceduralMemoryConfig:
        reject_unsafe_path("skill_md_directory", self.skill_md_directory)
        return self


class ExperienceCompressorConfig(BaseModel):
    """``memory.consolidation.experience_compressor`` (seed 003, GEMS two-tier): execution
    reports and their captures (Tier 1, raw traces) compressed into one strategic learning
    each (Tier 2). ``model`` None: the company's resolved model. A compression whose
    ``1 - compressed/raw`` length ratio is below ``min_compression_ratio`` is not kept (the
    run records it as skipped). See docs/agents/procedural-learning.md."""

    model_config = FROZEN

    enabled: bool = False
    model: NotBlankStr | None = None
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    max_tokens: int = Field(default=400, ge=16, le=8000)
    min_compression_ratio: float = Field(default=0.5, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _knobs_need_the_compressor(self) -> ExperienceCompressorConfig:
        refuse_unless(self, self.enabled, "enabled is true")
        return self


class WikiExportConfig(BaseModel):
    """``memory.consolidation.wiki_export`` (seed 003): a filesystem export of the company's
    experiences — ``raw/`` (Tier 1: execution reports and their captures), ``wiki/`` (Tier 2:
    compressed experiences) and ``index.md`` — under ``export_root``, a relative directory
    inside the company's server-owned directory (``SYNTHORG_TENANT_FILES_DIR/<company id>/``;
    absolute paths and ``..`` refused). ``trigger``: after each scheduled consolidation of the
    company, or only when asked (REST). ``max_entries_per_view`` None: at most 1000."""

    model_config = FROZEN

    enabled: bool = False
    export_root: NotBlankStr = "wiki"
    trigger: Literal["on_consolidation", "manual"] = "on_consolidation"
    include_raw_tier: bool = True
    include_compressed_tier: bool = True
    max_entries_per_view: int | None = Field(default=None, ge=1, le=1000)

    @model_validator(mode="after")
    def _reject_traversal(self) -> WikiExportConfig:
        reject_unsafe_path("export_root", self.export_root)
        if self.export_root.strip().strip("/") in ("", "."):
            raise ConfigFieldError(
                "export_root", "must name a directory inside the company's directory"
            )
        refuse_unless(self, self.enabled, "enabled is true")
        return self


#: registered by :class:`memory.procedural.apps.ProceduralConfig`; the consolidation
#: section's two fields sit after ``llm``, where the kernel declared them before
SECTIONS = (
    ConfigSection("memory.procedural", ProceduralMemoryConfig, after="chunking"),
    ConfigSection(
        "memory.consolidation.experience_compressor", ExperienceCompressorConfig, after="llm"
    ),
    ConfigSection(
        "memory.consolidation.wiki_export", WikiExportConfig, after="experience_compressor"
    ),
)
