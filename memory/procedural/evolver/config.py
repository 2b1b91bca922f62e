"""``memory.procedural.evolver``: the cross-agent skill evolver's safety rails (the
company-config section this app registers under the procedural section)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from synthorg.company_config.fields import FROZEN, NOT_OFFERED_CODE, ConfigFieldError, refuse_unless
from synthorg.company_config.sections import ConfigCheck, ConfigSection
from synthorg.enums import ConsolidationInterval

if TYPE_CHECKING:
    from synthorg.company_config.memory import CompanyMemoryConfig


class EvolverConfig(BaseModel):
    """``memory.procedural.evolver``: the cross-agent skill evolver's safety rails.

    ``requires_human_approval`` is typed ``Literal[True]``: a config that sets it to false
    is invalid, so no configuration can let the evolver write org memory itself.
    """

    model_config = FROZEN

    enabled: bool = False
    requires_human_approval: Literal[True] = True
    min_confidence_for_org_promotion: float = Field(default=0.8, ge=0.0, le=1.0)
    min_agents_seen_pattern: int = Field(default=3, ge=1, le=10_000)
    max_proposals_per_cycle: int = Field(default=10, ge=1, le=1_000)
    # No proposal is emitted while the company has this many live procedure facts.
    max_org_entries: int = Field(default=10_000, ge=1)
    window_days: int = Field(default=7, ge=1, le=365)

    @model_validator(mode="after")
    def _rails_need_the_evolver(self) -> EvolverConfig:
        refuse_unless(self, self.enabled, "enabled is true")
        return self


EVOLVER_NEVER_SCHEDULED = (
    "is not offered with consolidation.interval 'never': the evolver runs on the "
    "consolidation schedule, so it would never run; set memory.consolidation.interval to "
    "hourly, daily or weekly, or remove the key"
)


def evolver_needs_a_schedule(memory: CompanyMemoryConfig) -> None:
    """The seeds' evolver "runs on the consolidation schedule": with interval 'never' there
    is none, and enabling it would change nothing (run on the ``memory`` section)."""
    if (
        memory.procedural.evolver.enabled
        and memory.consolidation.interval is ConsolidationInterval.NEVER
    ):
        raise ConfigFieldError(
            "procedural.evolver.enabled", EVOLVER_NEVER_SCHEDULED, code=NOT_OFFERED_CODE
        )


#: registered by :class:`memory.procedural.evolver.apps.EvolverConfig`
SECTIONS = (ConfigSection("memory.procedural.evolver", EvolverConfig),)
CHECKS = (ConfigCheck("memory", evolver_needs_a_schedule),)
