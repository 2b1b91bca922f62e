"""``memory.extraction`` / ``memory.conversation`` / ``memory.dream``: conversation ingestion
(the company-config sections this app registers)."""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from synthorg.company_config.fields import FROZEN, NotBlankStr, refuse_unless
from synthorg.company_config.sections import ConfigSection
from synthorg.enums import ConsolidationInterval


class ExtractionConfig(BaseModel):
    """Debounced fact extraction from flushed conversations. On by default: the turns
    themselves are stored as episodic memories (``method: verbatim``) and, with an LLM, the
    facts it extracts are added on top. ``store_turns: false`` keeps only the LLM's facts
    while it answers (the turns are still stored without an LLM or while it fails)."""

    model_config = FROZEN

    enabled: bool = True
    store_turns: bool = True
    model: NotBlankStr | None = None  # None: the deployment's SYNTHORG_LLM_MODEL
    debounce_seconds: int = Field(default=30, ge=0, le=86_400)
    max_pending_tokens: int = Field(default=4000, ge=50, le=1_000_000)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    max_facts_per_run: int = Field(default=20, ge=1, le=200)
    max_batch_tokens: int = Field(default=8000, ge=100, le=200_000)
    relevant_memories: int = Field(default=10, ge=0, le=100)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    retry_backoff_seconds: int = Field(default=60, ge=1, le=86_400)

    @model_validator(mode="after")
    def _knobs_need_extraction(self) -> ExtractionConfig:
        refuse_unless(self, self.enabled, "enabled is true")
        return self


class ConversationContextConfig(BaseModel):
    """The context tier: a running summary plus the most recent messages."""

    model_config = FROZEN

    summary_threshold_tokens: int = Field(default=2000, ge=50, le=1_000_000)
    max_summary_tokens: int = Field(default=500, ge=50, le=8000)


class DreamConfig(BaseModel):
    """Deep dream: consolidate the journal into the agent's core summary memory."""

    model_config = FROZEN

    enabled: bool = True
    interval: ConsolidationInterval = ConsolidationInterval.DAILY
    lookback_days: int = Field(default=7, ge=1, le=365)
    max_core_tokens: int = Field(default=600, ge=50, le=8000)
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    #: an agent may ask for a dream now (``POST /dreams``, ``request_dream``) at most once
    #: per this many seconds, and the company's agents together at most
    #: ``company_requests_per_hour`` times in any hour; beyond that: 429 with Retry-After
    agent_request_interval_seconds: int = Field(default=3600, ge=1, le=7 * 86_400)
    company_requests_per_hour: int = Field(default=30, ge=1, le=10_000)

    @model_validator(mode="after")
    def _knobs_need_dreams(self) -> DreamConfig:
        refuse_unless(self, self.enabled, "enabled is true")
        return self


#: registered by :class:`memory.ingestion.apps.IngestionConfig`, each just before
#: ``request_log`` (so in this order)
SECTIONS = (
    ConfigSection("memory.extraction", ExtractionConfig, before="request_log"),
    ConfigSection("memory.conversation", ConversationContextConfig, before="request_log"),
    ConfigSection("memory.dream", DreamConfig, before="request_log"),
)
