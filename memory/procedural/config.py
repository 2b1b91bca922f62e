"""``memory.procedural``: lesson capture, pruning and propagation (the company-config section
this app registers; the skill evolver adds ``memory.procedural.evolver``,
:mod:`memory.procedural.evolver.config`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from synthorg.company_config.fields import FROZEN, NotBlankStr, refuse_unless, reject_unsafe_path
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


#: registered by :class:`memory.procedural.apps.ProceduralConfig`
SECTIONS = (ConfigSection("memory.procedural", ProceduralMemoryConfig, after="chunking"),)
