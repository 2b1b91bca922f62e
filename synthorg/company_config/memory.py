"""``memory:``: storage, options, embedder, retrieval, self-editing, consolidation, chunking,
redaction, the request log, and :class:`CompanyMemoryConfig`, which composes them. The
capabilities' sections (``procedural``, ``fine_tune``, ``extraction``, ``conversation``,
``dream``, and ``consolidation.experience_compressor`` / ``consolidation.wiki_export``) are
declared next to their code and registered into it at start-up
(:mod:`synthorg.company_config.sections`).

Where the spec names Mem0/Qdrant/SQLite, this product runs on PostgreSQL + pgvector; those
names are refused at load (code ``config_value_not_offered``) saying what is used instead:
accepted, they would record a choice that changes nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from synthorg.company_config.fields import (
    FROZEN,
    NEEDS_SETTING_CODE,
    NOT_OFFERED_CODE,
    ConfigFieldError,
    NotBlankStr,
    non_default_fields,
    refuse_not_offered,
    refuse_unless,
)
from synthorg.company_config.namespaces import (
    DEFAULT_TEMPLATES,
    NamespaceTemplate,
    unique_scopes,
)
from synthorg.company_config.sections import run_section_checks
from synthorg.enums import ConsolidationInterval, MemoryCategory, MemoryLevel
from synthorg.outbound import ALLOWED_SCHEMES, SCHEME_REFUSED
from synthorg.retrieval.vectors import HNSW_HALFVEC_MAX_DIMS

# --- memory: storage / options / embedder / chunking / redaction ------------------------------


#: the one value each storage key may take: memories, their vectors and their history are
#: rows in this service's PostgreSQL (with pgvector); no directory is opened
DATA_DIR_DEFAULT: Final = "/data/memory"
STORAGE_REASONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "vector_store": (
            "pgvector",
            "vectors are stored in PostgreSQL with pgvector; remove the key or set 'pgvector'",
        ),
        "history_store": (
            "postgresql",
            "memory history is stored in PostgreSQL; remove the key or set 'postgresql'",
        ),
        "data_dir": (
            DATA_DIR_DEFAULT,
            "memories are rows in PostgreSQL, no directory is opened, so a data_dir would "
            "change nothing; remove the key",
        ),
    }
)


class MemoryStorageConfig(BaseModel):
    """The seeds' storage section, kept so their files name it: every key has the one value
    this service runs (any other is refused, see ``STORAGE_REASONS``)."""

    model_config = FROZEN

    data_dir: Literal["/data/memory"] = DATA_DIR_DEFAULT
    vector_store: Literal["pgvector"] = "pgvector"
    history_store: Literal["postgresql"] = "postgresql"

    @model_validator(mode="before")
    @classmethod
    def _refuse_other_stores(cls, data: Any) -> Any:
        for field, (offered, reason) in STORAGE_REASONS.items():
            refuse_not_offered(data, field, offered, reason)
        return data


class MemoryOptionsConfig(BaseModel):
    model_config = FROZEN

    retention_days: int | None = Field(default=None, ge=1)
    max_memories_per_agent: int = Field(default=10_000, ge=1)
    consolidation_interval: ConsolidationInterval = ConsolidationInterval.DAILY
    shared_knowledge_base: bool = True
    #: A session-level memory expires this many hours after it is written, whether or not
    #: the agent ends its session; maintenance then archives it.
    session_ttl_hours: int = Field(default=24, ge=1, le=24 * 365)


# Vectors of any width up to pgvector's HNSW limit (4,000 dims as halfvec) are stored and
# indexed (see synthorg.retrieval.vectors); a wider embedder could never be indexed.
MAX_EMBEDDING_DIMS = HNSW_HALFVEC_MAX_DIMS
# Only environment variables under this prefix may be named by a company config: the value
# is sent as a Bearer token to the company's endpoint, so naming DJANGO_SECRET_KEY or
# DATABASE_URL would hand server secrets to whoever edits the config.
SECRET_ENV_PREFIX = "SYNTHORG_SECRET_"
_SECRET_ENV_NAME = re.compile(rf"^{SECRET_ENV_PREFIX}[A-Z0-9_]+$")


EMBEDDER_PROVIDER_REFUSED = (
    "is not used: every embedder is called through the OpenAI-compatible /embeddings API "
    "(OpenAI, Ollama /v1, vLLM, LM Studio, ...) at base_url; remove provider and set "
    "base_url, model and dims"
)
EMBEDDER_NEEDS_BASE_URL = (
    "is required: without a base_url the company uses the local embedder "
    "(all-MiniLM-L6-v2, 384 dims) and model, dims and api_key_env would change nothing"
)


class EmbedderOverrideConfig(BaseModel):
    """Override of the default local embedder with an OpenAI-compatible endpoint.

    ``base_url``/``api_key_env`` say where to call; the key itself is read from the named
    environment variable so secrets never live in the company config. Only variables named
    ``SYNTHORG_SECRET_<NAME>`` may be named (see ``SECRET_ENV_PREFIX``).
    """

    model_config = FROZEN

    #: refused when set: every embedder is called through the OpenAI-compatible API
    provider: None = None
    model: NotBlankStr | None = None
    dims: int | None = Field(default=None, ge=8)
    base_url: NotBlankStr | None = None
    api_key_env: NotBlankStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_provider(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("provider") is not None:
            raise ConfigFieldError("provider", EMBEDDER_PROVIDER_REFUSED, code=NOT_OFFERED_CODE)
        return data

    @field_validator("base_url")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        # The address itself is checked against the operator's allow-list when the config is
        # written (synthorg.tenancy) and on every connection (synthorg.outbound).
        if value is not None:
            scheme = value.split(":", 1)[0].lower() if ":" in value else ""
            if scheme not in ALLOWED_SCHEMES:
                raise ValueError(SCHEME_REFUSED.format(scheme=scheme or value))
        return value

    @field_validator("api_key_env")
    @classmethod
    def _allow_listed_secret(cls, value: str | None) -> str | None:
        if value is not None and not _SECRET_ENV_NAME.match(value):
            raise ValueError(
                f"must name an environment variable {SECRET_ENV_PREFIX}<NAME> "
                f"(upper-case letters, digits, underscores); {value!r} is not allowed"
            )
        return value

    @field_validator("dims")
    @classmethod
    def _indexable_dims(cls, value: int | None) -> int | None:
        if value is not None and value > MAX_EMBEDDING_DIMS:
            raise ValueError(
                f"{value}-dimensional vectors cannot be indexed: pgvector's HNSW index holds "
                f"at most {MAX_EMBEDDING_DIMS} dimensions (as halfvec); use a model or a "
                f"`dimensions` setting that produces at most {MAX_EMBEDDING_DIMS}"
            )
        return value

    @model_validator(mode="after")
    def _model_requires_dims(self) -> EmbedderOverrideConfig:
        if (self.model is None) != (self.dims is None):
            raise ConfigFieldError(
                "dims", "model and dims must be set together", code=NEEDS_SETTING_CODE
            )
        if self.base_url is not None and self.model is None:
            raise ConfigFieldError(
                "model", "an embedder base_url needs a model and dims", code=NEEDS_SETTING_CODE
            )
        if self.model is not None and self.base_url is None:
            raise ConfigFieldError("base_url", EMBEDDER_NEEDS_BASE_URL, code=NOT_OFFERED_CODE)
        if self.api_key_env is not None and self.base_url is None:
            raise ConfigFieldError("api_key_env", EMBEDDER_NEEDS_BASE_URL, code=NOT_OFFERED_CODE)
        return self


#: Vectors one memory may have (its first window plus chunks): 27 windows cover the longest
#: content (memory.core.chunking), so the cap is a cost bound, not a silent truncation, at the
#: default.
MAX_CHUNKS_LIMIT = 32


class MemoryChunkingConfig(BaseModel):
    """How a memory's text becomes vectors (``memory.core.chunking``).

    ``max_chunks``: windows embedded per memory (content past the last one is found by the
    sparse leg only). ``context_chars``: characters of a memory's context embedded with its
    first window, never more than the room its content leaves. The default 0 (the context is
    indexed by the sparse leg only, the vectors are the content's) is the best on both dev
    splits (measured: docs/benchmarks/retrieval.md#long-memories-and-context).
    """

    model_config = FROZEN

    max_chunks: int = Field(default=MAX_CHUNKS_LIMIT, ge=1, le=MAX_CHUNKS_LIMIT)
    context_chars: int = Field(default=0, ge=0, le=4000)


class RedactionConfig(BaseModel):
    """Which secret patterns :mod:`synthorg.redaction` removes from text agents send."""

    model_config = FROZEN

    disabled_patterns: tuple[NotBlankStr, ...] = ()
    extra_patterns: dict[NotBlankStr, NotBlankStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_patterns(self) -> RedactionConfig:
        from synthorg.redaction import BUILTIN_NAMES, Redactor

        for name in self.disabled_patterns:
            if name not in BUILTIN_NAMES:
                raise ConfigFieldError(
                    "disabled_patterns",
                    f"unknown pattern {name!r} (known: {', '.join(sorted(BUILTIN_NAMES))})",
                )
        for name, pattern in self.extra_patterns.items():
            try:
                Redactor.configured(extra={name: pattern})
            except ValueError as exc:
                raise ConfigFieldError(f"extra_patterns.{name}", str(exc)) from None
        return self


# --- memory: retrieval -----------------------------------------------------------------------


class InjectionStrategy(StrEnum):
    CONTEXT = "context"
    TOOL_BASED = "tool_based"
    SELF_EDITING = "self_editing"


class InjectionPoint(StrEnum):
    SYSTEM = "system"
    USER = "user"


class FusionStrategy(StrEnum):
    LINEAR = "linear"
    RRF = "rrf"


#: The product default is hybrid RRF over both legs (DESIGN.md "Retrieval"): ``rrf_k`` 10
#: and ``min_relevance`` 0 were chosen on the LoCoMo dev split (measured:
#: docs/benchmarks/retrieval.md#fusion-levers). A config that selects ``linear`` gets the seeds'
#: linear defaults for the fields whose meaning depends on the strategy.
LINEAR_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "rrf_k": 60,
        "min_relevance": 0.3,
        "personal_boost": 0.1,
        "speaker_boost": 0.0,
        "time_window_legs": False,
    }
)


#: The linear formula's weights: under ``rrf`` the legs' ranks decide the order, so a value
#: other than the default would change no ranking.
LINEAR_WEIGHTS = ("relevance_weight", "recency_weight", "recency_decay_rate")
RRF_IGNORES_WEIGHT = (
    "is only used by fusion_strategy 'linear' (under 'rrf' the ranks of the dense and BM25 "
    "legs decide the order); set fusion_strategy: linear, or remove it"
)


def _tunes_linear_weights(data: Mapping[str, Any]) -> bool:
    fields = MemoryRetrievalConfig.model_fields
    return any(name in data and data[name] != fields[name].default for name in LINEAR_WEIGHTS)


INJECTION_POINT_TOOL_BASED = (
    "{point!r} is not offered with strategy 'tool_based': it places the injected memories, "
    "and tool_based injects none (the agent searches with tools); remove the key or use "
    "strategy 'context' or 'self_editing'"
)


class MemoryRetrievalConfig(BaseModel):
    """``fusion_strategy`` ``rrf`` (the default) ranks by RRF of the dense and BM25 legs;
    ``linear`` (the seeds' formula) ranks the candidates of both legs by cosine relevance
    (+ ``personal_boost``) and recency, so BM25 only contributes candidates there (and the
    relevance when the query cannot be embedded)."""

    model_config = FROZEN

    strategy: InjectionStrategy = InjectionStrategy.CONTEXT
    relevance_weight: float = Field(default=0.7, ge=0.0, le=1.0)
    recency_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    recency_decay_rate: float = Field(default=0.01, ge=0.0, le=10.0)
    personal_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    max_memories: int = Field(default=20, ge=1, le=100)
    include_shared: bool = True
    default_relevance: float = Field(default=0.5, ge=0.0, le=1.0)
    injection_point: InjectionPoint = InjectionPoint.SYSTEM
    non_inferable_only: bool = False
    fusion_strategy: FusionStrategy = FusionStrategy.RRF
    rrf_k: int = Field(default=10, ge=1, le=1000)
    #: rrf only: candidates spoken by a speaker the query is about (tag ``speaker:<name>``)
    #: gain this × the best fused score (memory/core/retrieval/speakers.py; 0 = off; the
    #: default chosen on both dev splits, measured:
    #: docs/benchmarks/retrieval.md#multi-session-levers)
    speaker_boost: float = Field(default=0.5, ge=0.0, le=1.0)
    #: rrf only: a question with a time anchor ("last week", "in May 2023", "yesterday",
    #: relative to the search's date) adds a leg over the memories created inside the
    #: anchor's window (memory/core/retrieval/temporal.py; measured per fold:
    #: docs/benchmarks/retrieval.md#time-aware-levers)
    time_window_legs: bool = True
    #: rrf only: for a question about the current state ("latest", "now", …) candidates
    #: gain this × the best fused score × their place in time, newest most (0 = off)
    latest_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    #: rrf only: a candidate's fused score is divided by 1 + this × the candidates already
    #: ranked from its session (memories ≤ 30 min apart), so the top spans sessions (0 = off)
    session_spread: float = Field(default=0.0, ge=0.0, le=5.0)
    diversity_penalty_enabled: bool = False
    diversity_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    candidate_pool_multiplier: int = Field(default=3, ge=1, le=10)
    query_reformulation_enabled: bool = False
    max_reformulation_rounds: int = Field(default=2, ge=1, le=5)
    retriever: Literal["flat", "hierarchical"] = "flat"
    max_workers_per_query: int = Field(default=3, ge=1, le=3)
    reflective_retry_enabled: bool = False
    max_retry_count: int = Field(default=1, ge=1, le=3)
    query_specific_rerank_enabled: bool = False
    rerank_cache_ttl_seconds: int = Field(default=3600, ge=1, le=86_400)

    @model_validator(mode="before")
    @classmethod
    def _linear_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        if "fusion_strategy" not in data and (
            "personal_boost" in data or _tunes_linear_weights(data)
        ):
            # personal_boost and the relevance / recency weights are the seeds' linear
            # formula: a config that tunes them without naming a strategy (as the seeds' own
            # example does) is a linear one, so they act.
            data = {**data, "fusion_strategy": FusionStrategy.LINEAR.value}
        if data.get("fusion_strategy") in (FusionStrategy.LINEAR, FusionStrategy.LINEAR.value):
            return {**LINEAR_DEFAULTS, **data}
        return data

    def _explicit(self, name: str) -> bool:
        # "Set to something other than its default": a stored, fully dumped config
        # re-parses cleanly, while a knob set without the feature it tunes is refused.
        return getattr(self, name) != type(self).model_fields[name].default

    @model_validator(mode="after")
    def _linear_weights_need_linear(self) -> MemoryRetrievalConfig:
        if self.fusion_strategy is FusionStrategy.RRF:
            for name in LINEAR_WEIGHTS:
                if self._explicit(name):
                    raise ConfigFieldError(name, RRF_IGNORES_WEIGHT, code=NOT_OFFERED_CODE)
        return self

    @model_validator(mode="after")
    def _validate_consistency(self) -> MemoryRetrievalConfig:
        self._check_fusion()
        self._check_diversity()
        self._check_reformulation()
        self._check_hierarchical()
        self._check_rerank()
        return self

    def _check_fusion(self) -> None:
        """Each fusion strategy's knobs only with that strategy."""
        linear = self.fusion_strategy is FusionStrategy.LINEAR
        if linear and not math.isclose(
            self.relevance_weight + self.recency_weight, 1.0, abs_tol=1e-6
        ):
            raise ConfigFieldError(
                "relevance_weight", "relevance_weight + recency_weight must sum to 1.0"
            )
        if linear and self.rrf_k != LINEAR_DEFAULTS["rrf_k"]:
            raise ConfigFieldError(
                "rrf_k", "is only used with fusion_strategy 'rrf'", code=NEEDS_SETTING_CODE
            )
        # 0.1 was the default before rrf was: configs stored (fully dumped) back then carry
        # it and must keep loading; rrf never applied it.
        legacy_boost = self.personal_boost == LINEAR_DEFAULTS["personal_boost"]
        if not linear and self.personal_boost > 0 and not legacy_boost:
            raise ConfigFieldError(
                "personal_boost", "is not applied by fusion_strategy 'rrf'; set it to 0"
            )
        if linear and self.speaker_boost:
            raise ConfigFieldError(
                "speaker_boost", "is only used with fusion_strategy 'rrf'", code=NEEDS_SETTING_CODE
            )
        for name in ("time_window_legs", "latest_boost", "session_spread"):
            if linear and getattr(self, name):
                raise ConfigFieldError(
                    name, "is only used with fusion_strategy 'rrf'", code=NEEDS_SETTING_CODE
                )

    def _check_diversity(self) -> None:
        """The diversity penalty's knobs only when it is on, and it only with 'context'."""
        if self._explicit("diversity_lambda") and not self.diversity_penalty_enabled:
            raise ConfigFieldError(
                "diversity_lambda",
                "is only used when diversity_penalty_enabled is true",
                code=NEEDS_SETTING_CODE,
            )
        if self._explicit("candidate_pool_multiplier") and not self.diversity_penalty_enabled:
            raise ConfigFieldError(
                "candidate_pool_multiplier",
                "is only used when diversity_penalty_enabled is true",
                code=NEEDS_SETTING_CODE,
            )
        if self.diversity_penalty_enabled and self.strategy is not InjectionStrategy.CONTEXT:
            raise ConfigFieldError(
                "diversity_penalty_enabled", "is only supported with strategy 'context'"
            )

    def _check_reformulation(self) -> None:
        """Query reformulation only with 'tool_based', its rounds only when it is on."""
        if self.query_reformulation_enabled and self.strategy is not InjectionStrategy.TOOL_BASED:
            raise ConfigFieldError(
                "query_reformulation_enabled",
                "requires strategy 'tool_based'",
                code=NEEDS_SETTING_CODE,
            )
        if self._explicit("max_reformulation_rounds") and not self.query_reformulation_enabled:
            raise ConfigFieldError(
                "max_reformulation_rounds",
                "is only used when query_reformulation_enabled",
                code=NEEDS_SETTING_CODE,
            )

    # The seeds' three validators (hierarchical requires context; hierarchical field
    # consistency; rerank TTL consistency): a knob set without what it tunes is refused.
    def _check_hierarchical(self) -> None:
        """The hierarchical retriever only with 'context', its knobs only with it."""
        hierarchical = self.retriever == "hierarchical"
        if hierarchical and self.strategy is not InjectionStrategy.CONTEXT:
            raise ConfigFieldError(
                "retriever", "'hierarchical' requires strategy 'context'", code=NEEDS_SETTING_CODE
            )
        for name in ("max_workers_per_query", "reflective_retry_enabled"):
            if self._explicit(name) and not hierarchical:
                raise ConfigFieldError(
                    name, "is only used with retriever 'hierarchical'", code=NEEDS_SETTING_CODE
                )
        if self._explicit("max_retry_count") and not (
            hierarchical and self.reflective_retry_enabled
        ):
            raise ConfigFieldError(
                "max_retry_count",
                "is only used with retriever 'hierarchical' and reflective_retry_enabled",
                code=NEEDS_SETTING_CODE,
            )

    def _check_rerank(self) -> None:
        """Query-specific re-ranking only where a re-ranking step runs; its TTL only with it."""
        # The self-editing strategy's archival search is the agent's own tool over its own
        # archive: no re-ranking step runs there, so the flag would be ignored.
        if self.query_specific_rerank_enabled and self.strategy is InjectionStrategy.SELF_EDITING:
            raise ConfigFieldError(
                "query_specific_rerank_enabled",
                "is applied by strategies 'context' and 'tool_based', not 'self_editing'",
            )
        if self._explicit("rerank_cache_ttl_seconds") and not self.query_specific_rerank_enabled:
            raise ConfigFieldError(
                "rerank_cache_ttl_seconds",
                "is only used with query_specific_rerank_enabled",
                code=NEEDS_SETTING_CODE,
            )

    @model_validator(mode="after")
    def _injection_point_needs_injected_memories(self) -> MemoryRetrievalConfig:
        # The role of the message that carries the fenced memories: the tool_based strategy
        # injects none (the agent searches with tools), so 'user' would change nothing.
        if self.injection_point is not InjectionPoint.SYSTEM and (
            self.strategy is InjectionStrategy.TOOL_BASED
        ):
            raise ConfigFieldError(
                "injection_point",
                INJECTION_POINT_TOOL_BASED.format(point=self.injection_point.value),
                code=NOT_OFFERED_CODE,
            )
        return self


class SelfEditingMemoryConfig(BaseModel):
    """``memory.self_editing``: the self-editing strategy's core / archival / recall blocks.

    Core memory (the agent's SEMANTIC memories tagged ``core``) is always injected within
    ``core_token_budget``; ``archival_memory_search`` returns at most
    ``archival_search_limit`` entries; ``archival_memory_write`` may write only the
    ``archival_write_categories``; ``allow_core_writes: false`` locks core memory (the
    ``locked_agents`` list locks it for the named agents only).
    """

    model_config = FROZEN

    core_token_budget: int = Field(default=500, ge=50, le=8000)
    archival_search_limit: int = Field(default=10, ge=1, le=50)
    archival_write_categories: tuple[MemoryCategory, ...] = (
        MemoryCategory.EPISODIC,
        MemoryCategory.SEMANTIC,
        MemoryCategory.PROCEDURAL,
        MemoryCategory.SOCIAL,
    )
    allow_core_writes: bool = True
    locked_agents: tuple[NotBlankStr, ...] = ()

    @field_validator("archival_write_categories")
    @classmethod
    def _unique_categories(cls, value: tuple[MemoryCategory, ...]) -> tuple[MemoryCategory, ...]:
        if len(set(value)) != len(value):
            raise ValueError("lists a category twice")
        return value

    def core_writes_allowed(self, agent_name: str) -> bool:
        return self.allow_core_writes and agent_name not in self.locked_agents


# --- memory: consolidation -------------------------------------------------------------------


class ConsolidationStrategyType(StrEnum):
    SIMPLE = "simple"
    DUAL_MODE = "dual_mode"
    LLM = "llm"


class RetentionAction(StrEnum):
    """What retention does to a memory past its retention days.

    ``archive`` (the default) moves it, whole, into the archive: it leaves the live set but
    stays restorable by id. ``delete`` removes it for good — from the live set *and* from
    the archive — and is the only config that destroys memories; an operator must spell it
    out on the rule (or as ``default_action`` next to ``default_retention_days``).
    """

    ARCHIVE = "archive"
    DELETE = "delete"


class RetentionCategory(StrEnum):
    """What a retention rule names: a memory category, or ``core`` — the agent's core memory
    (tag ``core``, read into every prompt). Only a rule naming ``core`` ages core memory out:
    a ``semantic`` rule and the defaults never touch it."""

    WORKING = MemoryCategory.WORKING.value
    EPISODIC = MemoryCategory.EPISODIC.value
    SEMANTIC = MemoryCategory.SEMANTIC.value
    PROCEDURAL = MemoryCategory.PROCEDURAL.value
    SOCIAL = MemoryCategory.SOCIAL.value
    CORE = "core"


class RetentionRule(BaseModel):
    model_config = FROZEN

    category: RetentionCategory
    retention_days: int = Field(ge=1)
    action: RetentionAction = RetentionAction.ARCHIVE


def _unique_categories(rules: tuple[RetentionRule, ...]) -> tuple[RetentionRule, ...]:
    seen: set[RetentionCategory] = set()
    for rule in rules:
        if rule.category in seen:
            raise ConfigFieldError("rules", f"category {rule.category.value!r} appears twice")
        seen.add(rule.category)
    return rules


def _default_action_needs_days(action: RetentionAction, default_retention_days: int | None) -> None:
    if action is RetentionAction.DELETE and default_retention_days is None:
        raise ConfigFieldError(
            "default_action",
            "'delete' needs default_retention_days (the days to keep)",
            code=NEEDS_SETTING_CODE,
        )


class RetentionConfig(BaseModel):
    model_config = FROZEN

    rules: tuple[RetentionRule, ...] = ()
    default_retention_days: int | None = Field(default=None, ge=1)
    default_action: RetentionAction = RetentionAction.ARCHIVE

    @model_validator(mode="after")
    def _validate_rules(self) -> RetentionConfig:
        _unique_categories(self.rules)
        _default_action_needs_days(self.default_action, self.default_retention_days)
        return self

    def days_for(self, category: RetentionCategory) -> int | None:
        rule = self.rule_for(category)
        return rule.retention_days if rule else None

    def rule_for(self, category: RetentionCategory) -> RetentionRule | None:
        return next((r for r in self.rules if r.category == category), None)


class AgentRetentionOverrides(BaseModel):
    """An agent's own retention settings (stored on ``Agent.retention_overrides``)."""

    model_config = FROZEN

    rules: tuple[RetentionRule, ...] = ()
    default_retention_days: int | None = Field(default=None, ge=1)
    default_action: RetentionAction = RetentionAction.ARCHIVE

    @model_validator(mode="after")
    def _validate_rules(self) -> AgentRetentionOverrides:
        _unique_categories(self.rules)
        _default_action_needs_days(self.default_action, self.default_retention_days)
        return self

    def days_for(self, category: RetentionCategory) -> int | None:
        rule = self.rule_for(category)
        return rule.retention_days if rule else None

    def rule_for(self, category: RetentionCategory) -> RetentionRule | None:
        return next((r for r in self.rules if r.category == category), None)


class DualModeConfig(BaseModel):
    model_config = FROZEN

    enabled: bool = False
    dense_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    summarization_model: NotBlankStr | None = None
    max_summary_tokens: int = Field(default=200, ge=50, le=1000)
    max_facts: int = Field(default=20, ge=1, le=100)
    anchor_length: int = Field(default=150, ge=50, le=500)

    @model_validator(mode="after")
    def _validate_model_when_enabled(self) -> DualModeConfig:
        if self.enabled and self.summarization_model is None:
            raise ConfigFieldError(
                "summarization_model",
                "is required when dual_mode is enabled",
                code=NEEDS_SETTING_CODE,
            )
        return self


class ArchivalConfig(BaseModel):
    """``enabled``: memories older than ``age_threshold_days`` are consolidated — summarised
    in the live set, the originals moved whole into the archive (restorable by id). ``false``
    leaves old memories live and whole. The spec's default is ``false``; ours is ``true``
    (consolidation always archives, so it destroys nothing; see docs/architecture/lifecycle.md).
    """

    model_config = FROZEN

    enabled: bool = True
    age_threshold_days: int = Field(default=90, ge=1)
    dual_mode: DualModeConfig = Field(default_factory=DualModeConfig)


class LLMConsolidationConfig(BaseModel):
    model_config = FROZEN

    group_threshold: int = Field(default=3, ge=2, le=100)
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_summary_tokens: int = Field(default=500, ge=50, le=4000)
    max_entry_input_chars: int = Field(default=2000, ge=100, le=20_000)
    max_total_user_content_chars: int = Field(default=20_000, ge=1000, le=200_000)
    fallback_truncate_length: int = Field(default=200, ge=20, le=2000)


LLM_GROUP_THRESHOLD_BELOW = (
    "is below group_threshold ({threshold}), which the llm strategy applies too, so it would "
    "change nothing; set it to at least {threshold} or remove it"
)


DUAL_MODE_ENABLED_CONFLICT = (
    "selects strategy 'dual_mode', but strategy is {strategy!r}; remove one of the two"
)
DUAL_MODE_ONLY = (
    "is only used by strategy 'dual_mode' (set archival.dual_mode.enabled: true), or remove it"
)
LLM_ONLY = "is only used by strategy 'llm' (set strategy: llm), or remove it"


class ConsolidationConfig(BaseModel):
    model_config = FROZEN

    enabled: bool = True
    interval: ConsolidationInterval = ConsolidationInterval.DAILY
    strategy: ConsolidationStrategyType = ConsolidationStrategyType.SIMPLE
    group_threshold: int = Field(default=3, ge=2, le=1000)
    max_memories_per_agent: int = Field(default=10_000, ge=1)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    archival: ArchivalConfig = Field(default_factory=ArchivalConfig)
    llm: LLMConsolidationConfig = Field(default_factory=LLMConsolidationConfig)
    # experience_compressor, wiki_export: registered here by memory.procedural (its config.py)

    @model_validator(mode="before")
    @classmethod
    def _dual_mode_selects_its_strategy(cls, data: Any) -> Any:
        # ``archival.dual_mode.enabled: true`` without a strategy (the seeds' own example)
        # means the dual-mode strategy: otherwise it would change nothing.
        if not isinstance(data, Mapping) or "strategy" in data:
            return data
        archival = data.get("archival")
        dual = archival.get("dual_mode") if isinstance(archival, Mapping) else None
        if isinstance(dual, Mapping) and dual.get("enabled") is True:
            return {**data, "strategy": ConsolidationStrategyType.DUAL_MODE.value}
        return data

    @model_validator(mode="after")
    def _strategy_knobs_need_their_strategy(self) -> ConsolidationConfig:
        dual = self.archival.dual_mode
        if self.strategy is not ConsolidationStrategyType.DUAL_MODE:
            if dual.enabled:
                raise ConfigFieldError(
                    "archival.dual_mode.enabled",
                    DUAL_MODE_ENABLED_CONFLICT.format(strategy=self.strategy.value),
                    code=NOT_OFFERED_CODE,
                )
            for name in non_default_fields(dual, skip=("enabled",)):
                raise ConfigFieldError(
                    f"archival.dual_mode.{name}", DUAL_MODE_ONLY, code=NOT_OFFERED_CODE
                )
        if self.strategy is not ConsolidationStrategyType.LLM:
            for name in non_default_fields(self.llm, skip=("fallback_truncate_length",)):
                raise ConfigFieldError(f"llm.{name}", LLM_ONLY, code=NOT_OFFERED_CODE)
        return self

    @model_validator(mode="after")
    def _consolidating_knobs_need_archival(self) -> ConsolidationConfig:
        # With archival off no group is ever consolidated (the run stops at ARCHIVAL_OFF):
        # how old, how grouped and how summarised would change nothing.
        if not self.archival.enabled:
            needs = "archival.enabled is true"
            refuse_unless(self, False, needs, fields=("strategy", "group_threshold"))
            refuse_unless(
                self.archival, False, needs, fields=("age_threshold_days",), prefix="archival."
            )
            refuse_unless(
                self.llm, False, needs, fields=("fallback_truncate_length",), prefix="llm."
            )
        return self

    @model_validator(mode="after")
    def _validate_strategy(self) -> ConsolidationConfig:
        if self.strategy is ConsolidationStrategyType.DUAL_MODE and not (
            self.archival.dual_mode.enabled
        ):
            raise ConfigFieldError(
                "strategy",
                "'dual_mode' needs archival.dual_mode.enabled: true",
                code=NEEDS_SETTING_CODE,
            )
        # The llm strategy groups at max(group_threshold, llm.group_threshold): an llm
        # threshold set below the section's would change nothing.
        llm_threshold = self.llm.group_threshold
        llm_default = LLMConsolidationConfig.model_fields["group_threshold"].default
        if llm_threshold != llm_default and llm_threshold < self.group_threshold:
            raise ConfigFieldError(
                "llm.group_threshold",
                LLM_GROUP_THRESHOLD_BELOW.format(threshold=self.group_threshold),
                code=NOT_OFFERED_CODE,
            )
        return self


# --- memory: the section --------------------------------------------------------------------


class RequestLogConfig(BaseModel):
    """``memory.request_log``: the per-company log of agents' search and context calls
    (shown in the console). ``enabled: false`` records nothing; the retention schedule keeps
    at most ``max_entries`` rows per company and none older than ``max_age_days``."""

    model_config = FROZEN

    enabled: bool = True
    max_entries: int = Field(default=10_000, ge=1, le=1_000_000)
    max_age_days: int = Field(default=30, ge=1, le=3650)


#: Seed 003's ``backend: composite`` (with its ``composite:`` routing section) is refused with
#: this reason; the decision is docs/decisions/0011-composite-backend-refused.md.
COMPOSITE_REFUSED = (
    "the composite backend is not offered: it routes namespaces to different memory "
    "backends, and this service has one engine (PostgreSQL + pgvector) that already serves "
    "every namespace with the same search, isolation and lifecycle, so there is nothing to "
    "route to; remove 'composite' and use backend 'pgvector' (namespaces keep working)"
)
COMPOSITE_REFUSED_CODE = "composite_backend_refused"
BACKEND_REFUSED = (
    "this service has one memory engine, PostgreSQL + pgvector (the seeds' Mem0 backend "
    "is not run); remove the key or set 'pgvector'"
)


class CompanyMemoryConfig(BaseModel):
    model_config = FROZEN

    backend: Literal["pgvector"] = "pgvector"
    level: MemoryLevel = MemoryLevel.SESSION
    storage: MemoryStorageConfig = Field(default_factory=MemoryStorageConfig)
    options: MemoryOptionsConfig = Field(default_factory=MemoryOptionsConfig)
    retrieval: MemoryRetrievalConfig = Field(default_factory=MemoryRetrievalConfig)
    self_editing: SelfEditingMemoryConfig = Field(default_factory=SelfEditingMemoryConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    embedder: EmbedderOverrideConfig | None = None
    chunking: MemoryChunkingConfig = Field(default_factory=MemoryChunkingConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    request_log: RequestLogConfig = Field(default_factory=RequestLogConfig)
    #: tuple namespaces agents may name (synthorg.company_config.namespaces)
    namespace_templates: tuple[NamespaceTemplate, ...] = DEFAULT_TEMPLATES

    @field_validator("namespace_templates", mode="before")
    @classmethod
    def _templates_as_lists(cls, value: Any) -> Any:
        # YAML names a template as a list of parts: [org, "{company}", "{agent}"]
        if isinstance(value, (list, tuple)):
            return [{"parts": item} if isinstance(item, (list, tuple)) else item for item in value]
        return value

    @field_validator("namespace_templates")
    @classmethod
    def _unique_scopes(cls, value: tuple[NamespaceTemplate, ...]) -> tuple[NamespaceTemplate, ...]:
        return unique_scopes(value)

    @model_validator(mode="before")
    @classmethod
    def _refuse_composite(cls, data: Any) -> Any:
        # Before field validation: otherwise 'composite' would be refused as an unknown
        # literal / extra key, without saying why.
        if isinstance(data, Mapping):
            if data.get("backend") == "composite":
                raise ConfigFieldError("backend", COMPOSITE_REFUSED, code=COMPOSITE_REFUSED_CODE)
            if "composite" in data:
                raise ConfigFieldError("composite", COMPOSITE_REFUSED, code=COMPOSITE_REFUSED_CODE)
        refuse_not_offered(data, "backend", "pgvector", BACKEND_REFUSED)
        return data

    @model_validator(mode="after")
    def _apply_mirrors(self) -> CompanyMemoryConfig:
        """``options`` repeats three consolidation fields; set in one place, they agree.

        A value set only under ``options`` is mirrored into ``consolidation`` (and back);
        set in both places with different values is an error.
        """
        pairs = (
            ("consolidation_interval", "interval"),
            ("max_memories_per_agent", "max_memories_per_agent"),
        )
        options_set = self.options.model_fields_set
        consolidation_set = self.consolidation.model_fields_set
        options_update: dict[str, Any] = {}
        consolidation_update: dict[str, Any] = {}
        for option_name, consolidation_name in pairs:
            option_value = getattr(self.options, option_name)
            consolidation_value = getattr(self.consolidation, consolidation_name)
            in_options = option_name in options_set
            in_consolidation = consolidation_name in consolidation_set
            if in_options and in_consolidation and option_value != consolidation_value:
                raise ConfigFieldError(
                    f"consolidation.{consolidation_name}",
                    f"disagrees with options.{option_name} ({option_value!s})",
                )
            if in_options and not in_consolidation:
                consolidation_update[consolidation_name] = option_value
            elif in_consolidation and not in_options:
                options_update[option_name] = consolidation_value
        # options.retention_days is the company's default retention: the same value as
        # consolidation.retention.default_retention_days, which retention enforces.
        retention = self.consolidation.retention
        in_options = "retention_days" in options_set
        in_retention = (
            "retention" in consolidation_set
            and "default_retention_days" in retention.model_fields_set
        )
        if (
            in_options
            and in_retention
            and self.options.retention_days != (retention.default_retention_days)
        ):
            raise ConfigFieldError(
                "consolidation.retention.default_retention_days",
                f"disagrees with options.retention_days ({self.options.retention_days})",
            )
        if in_options and not in_retention:
            consolidation_update["retention"] = retention.model_dump(exclude_unset=True) | {
                "default_retention_days": self.options.retention_days
            }
        elif in_retention and not in_options:
            options_update["retention_days"] = retention.default_retention_days
        # Frozen models: rebuild the nested ones through validation, keeping fields_set.
        if consolidation_update:
            data = self.consolidation.model_dump(exclude_unset=True) | consolidation_update
            object.__setattr__(self, "consolidation", ConsolidationConfig.model_validate(data))
        if options_update:
            data = self.options.model_dump(exclude_unset=True) | options_update
            object.__setattr__(self, "options", MemoryOptionsConfig.model_validate(data))
        return self

    @model_validator(mode="after")
    def _section_checks(self) -> CompanyMemoryConfig:
        # the rules registered with capability sections (synthorg.company_config.sections),
        # after the mirrors above so they see the mirrored values
        run_section_checks(self)
        return self
