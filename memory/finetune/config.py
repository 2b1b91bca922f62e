"""``memory.fine_tune``: the per-company query adapter (the company-config section this app
registers)."""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from synthorg.company_config.fields import (
    FROZEN,
    NEEDS_SETTING_CODE,
    ConfigFieldError,
    NotBlankStr,
    refuse_unless,
    reject_unsafe_path,
)
from synthorg.company_config.sections import ConfigSection


class EmbeddingFineTuneConfig(BaseModel):
    """The per-company query adapter (docs/operating/fine-tune.md).

    ``enabled`` gates starting a run and applying the active adapter to searches;
    ``base_model`` must name the company's embedder (its ``embedder_id``), the vectors the
    adapter was trained on; ``checkpoint_path`` is the directory (under the company's
    server directory) adapter matrices are written to; ``training_data_dir``, when set,
    adds labelled pairs from its ``*.jsonl`` files (``{"query": ..., "memory_id": ...}``).
    ``evaluation_file``, when set, is a ``*.jsonl`` file there of the company's own dev
    questions (``{"query": ..., "memory_ids": [...]}``). A run's adapter is activated only
    when its nDCG@10 gain is at least ``min_gain`` on the held-out pairs and, when given,
    on the dev questions. A run whose worker died is resumed by a schedule once its lease of
    ``auto_resume_after_minutes`` has passed, at most ``max_auto_resumes`` times.
    With an LLM configured, ``synthetic_queries_per_memory`` questions are generated for up
    to ``max_synthetic_memories`` memories as pairs (source ``synthetic``).
    """

    model_config = FROZEN

    enabled: bool = False
    checkpoint_path: NotBlankStr | None = None
    base_model: NotBlankStr | None = None
    training_data_dir: NotBlankStr | None = None
    evaluation_file: NotBlankStr | None = None
    min_gain: float = Field(default=0.01, ge=0.0, le=1.0)
    epochs: int = Field(default=10, ge=1, le=200)
    max_training_seconds: int = Field(default=900, ge=1, le=86_400)
    learning_rate: float = Field(default=1e-3, gt=0.0, le=1.0)
    temperature: float = Field(default=0.05, gt=0.0, le=1.0)
    hard_negatives: int = Field(default=7, ge=0, le=64)
    held_out_share: float = Field(default=0.2, gt=0.0, lt=1.0)
    min_pairs: int = Field(default=20, ge=4)
    max_pairs: int = Field(default=20_000, ge=4)
    seed: int = Field(default=0, ge=0)
    #: The lease of a run's worker: renewed by every sign of life (an embedded batch, a
    #: saved epoch, an LLM call); once it has passed the run is reclaimed and resumed by the
    #: schedule, at most ``max_auto_resumes`` times (0: never; then it fails).
    auto_resume_after_minutes: int = Field(default=2, ge=1, le=1440)
    max_auto_resumes: int = Field(default=3, ge=0, le=20)
    #: With an LLM configured, a run first asks it for this many search questions per
    #: memory (the seeds' synthetic queries; 0: none), for at most ``max_synthetic_memories``
    #: memories (a seeded sample; 0: none).
    synthetic_queries_per_memory: int = Field(default=2, ge=0, le=10)
    max_synthetic_memories: int = Field(default=500, ge=0, le=5000)

    @model_validator(mode="after")
    def _validate(self) -> EmbeddingFineTuneConfig:
        for name in ("checkpoint_path", "training_data_dir", "evaluation_file"):
            reject_unsafe_path(name, getattr(self, name))
        if self.enabled and (self.checkpoint_path is None or self.base_model is None):
            missing = "checkpoint_path" if self.checkpoint_path is None else "base_model"
            raise ConfigFieldError(
                missing, "is required when fine-tuning is enabled", code=NEEDS_SETTING_CODE
            )
        if self.max_pairs < self.min_pairs:
            raise ConfigFieldError("max_pairs", "must be at least min_pairs")
        refuse_unless(self, self.enabled, "enabled is true")
        return self


#: registered by :class:`memory.finetune.apps.FineTuneConfig`
SECTIONS = (ConfigSection("memory.fine_tune", EmbeddingFineTuneConfig, after="redaction"),)
