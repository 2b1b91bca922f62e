"""Company configuration: defaults, the spec's examples, and every validator."""

import textwrap

import pytest
import yaml

from synthorg.company_config import CompanyConfig, CompanyConfigError, parse_company_config
from synthorg.company_config.memory import (
    RRF_IGNORES_WEIGHT,
    AgentRetentionOverrides,
    FusionStrategy,
)
from synthorg.enums import ConsolidationInterval, MemoryLevel, OrgFactCategory, SeniorityLevel

# The "Practical Example" of the memory configuration guide, verbatim but for the storage
# stack: its Mem0/Qdrant/SQLite names are refused (SEED_STACK, test below), this service's
# own names load.
SPEC_EXAMPLE = textwrap.dedent(
    """
    memory:
      backend: "pgvector"
      level: persistent
      storage:
        data_dir: "/data/memory"
        vector_store: "pgvector"
        history_store: "postgresql"
      options:
        retention_days: null
        max_memories_per_agent: 50000
        consolidation_interval: weekly
        shared_knowledge_base: true
      retrieval:
        strategy: context
        relevance_weight: 0.8
        recency_weight: 0.2
        personal_boost: 0.05
        min_relevance: 0.4
        max_memories: 30
        include_shared: true
      consolidation:
        interval: weekly
        max_memories_per_agent: 50000
        archival:
          enabled: true
          age_threshold_days: 180
          dual_mode:
            enabled: true
            dense_threshold: 0.6
            summarization_model: "example-small-001"
            max_summary_tokens: 300
            max_facts: 30
    org_memory:
      backend: "hybrid_prompt_retrieval"
      core_policies:
        - "All research findings must be reproducible."
        - "Cite sources for all claims."
      extended_store:
        max_retrieved_per_query: 10
    """
)


def errors_of(data) -> list[tuple[str, str]]:
    with pytest.raises(CompanyConfigError) as caught:
        parse_company_config(data)
    return [(e["field"], e["message"]) for e in caught.value.errors]


def fields_of(data) -> list[str]:
    return [field for field, _ in errors_of(data)]


def memory(**section) -> dict:
    return {"memory": section}


def retrieval(**fields) -> dict:
    return memory(retrieval=fields)


def test_empty_config_gives_the_spec_defaults():
    config = parse_company_config(None)
    assert config == parse_company_config({}) == CompanyConfig()
    assert config.memory.level is MemoryLevel.SESSION
    retrieval_config = config.memory.retrieval
    assert (retrieval_config.relevance_weight, retrieval_config.recency_weight) == (0.7, 0.3)
    assert retrieval_config.recency_decay_rate == 0.01
    # The product default is the benchmarked hybrid (DESIGN.md), not the seeds' linear.
    assert retrieval_config.fusion_strategy is FusionStrategy.RRF
    assert retrieval_config.rrf_k == 10
    assert retrieval_config.speaker_boost == 0.5
    assert retrieval_config.min_relevance == 0.0
    assert retrieval_config.personal_boost == 0.0
    assert retrieval_config.max_memories == 20
    assert config.memory.options.max_memories_per_agent == 10_000
    assert config.memory.consolidation.interval is ConsolidationInterval.DAILY
    assert config.memory.consolidation.archival.dual_mode.anchor_length == 150
    assert config.org_memory.extended_store.max_retrieved_per_query == 5
    assert config.org_memory.core_policies == ()


def test_linear_fusion_gets_the_seeds_linear_defaults():
    linear = parse_company_config(retrieval(fusion_strategy="linear")).memory.retrieval
    assert linear.fusion_strategy is FusionStrategy.LINEAR
    assert (linear.min_relevance, linear.personal_boost, linear.rrf_k) == (0.3, 0.1, 60)
    assert linear.speaker_boost == 0.0  # the speaker feature re-scores rrf's fused list
    tuned = parse_company_config(
        retrieval(fusion_strategy="linear", min_relevance=0.1, personal_boost=0)
    ).memory.retrieval
    assert (tuned.min_relevance, tuned.personal_boost) == (0.1, 0.0)


def test_configs_stored_before_rrf_became_the_default_still_load():
    # what company_create stored for {"fusion_strategy": "rrf"} under the old defaults
    old = retrieval(fusion_strategy="rrf", rrf_k=60, personal_boost=0.1, min_relevance=0.3)
    loaded = parse_company_config(old).memory.retrieval
    assert (loaded.rrf_k, loaded.min_relevance) == (60, 0.3)
    # and the old default config (no strategy named then) is a linear one
    stored = retrieval(fusion_strategy="linear", rrf_k=60, personal_boost=0.1, min_relevance=0.3)
    assert parse_company_config(stored).memory.retrieval.fusion_strategy is FusionStrategy.LINEAR


def test_stored_dumps_of_either_strategy_reparse_unchanged():
    for raw in ({}, retrieval(fusion_strategy="linear")):
        config = parse_company_config(raw)
        assert parse_company_config(config.model_dump(mode="json")) == config


def test_default_write_rules_follow_the_spec():
    rules = parse_company_config({}).org_memory.write_access.rules
    assert rules[OrgFactCategory.CORE_POLICY].allowed_seniority is None
    assert rules[OrgFactCategory.CORE_POLICY].human_allowed is True
    for category in (OrgFactCategory.ADR, OrgFactCategory.PROCEDURE, OrgFactCategory.CONVENTION):
        assert rules[category].allowed_seniority is SeniorityLevel.SENIOR
        assert rules[category].human_allowed is True
    assert OrgFactCategory.ENTITY_DEFINITION not in rules  # no rule: denied to everyone
    with pytest.raises(TypeError):
        rules[OrgFactCategory.ENTITY_DEFINITION] = rules[OrgFactCategory.ADR]  # read-only


def test_spec_example_loads():
    config = parse_company_config(yaml.safe_load(SPEC_EXAMPLE))
    assert config.memory.level is MemoryLevel.PERSISTENT
    assert config.memory.retrieval.max_memories == 30
    # it tunes personal_boost, a knob of the seeds' linear ranking, so it is a linear config
    assert config.memory.retrieval.fusion_strategy is FusionStrategy.LINEAR
    assert config.memory.consolidation.archival.dual_mode.max_facts == 30
    assert config.org_memory.core_policies == (
        "All research findings must be reproducible.",
        "Cite sources for all claims.",
    )


SEED_STACK = {"backend": "mem0", "vector_store": "qdrant", "history_store": "sqlite"}


def test_the_spec_examples_storage_stack_is_refused_naming_what_runs():
    """The example's Mem0/Qdrant/SQLite would be recorded and change nothing, so each is
    refused (code config_value_not_offered); the message says what to write instead."""
    data = yaml.safe_load(SPEC_EXAMPLE)
    data["memory"]["backend"] = SEED_STACK["backend"]
    assert errors_of(data) == [
        (
            "memory.backend",
            "'mem0' is not offered: this service has one memory engine, PostgreSQL + "
            "pgvector (the seeds' Mem0 backend is not run); remove the key or set 'pgvector'",
        )
    ]
    for key in ("vector_store", "history_store"):
        data = yaml.safe_load(SPEC_EXAMPLE)
        data["memory"]["storage"][key] = SEED_STACK[key]
        [(field, message)] = errors_of(data)
        assert field == f"memory.storage.{key}"
        assert message.startswith(f"{SEED_STACK[key]!r} is not offered: ")


def test_config_is_frozen_and_round_trips_through_json():
    config = parse_company_config(yaml.safe_load(SPEC_EXAMPLE))
    with pytest.raises(ValueError):
        config.memory.retrieval.max_memories = 5  # type: ignore[misc]
    assert parse_company_config(config.model_dump(mode="json")) == config


def test_options_mirror_into_consolidation_and_back():
    config = parse_company_config(
        memory(options={"consolidation_interval": "hourly", "max_memories_per_agent": 7})
    )
    assert config.memory.consolidation.interval is ConsolidationInterval.HOURLY
    assert config.memory.consolidation.max_memories_per_agent == 7
    config = parse_company_config(memory(consolidation={"interval": "weekly"}))
    assert config.memory.options.consolidation_interval is ConsolidationInterval.WEEKLY


def test_options_and_consolidation_may_not_disagree():
    assert errors_of(
        memory(options={"consolidation_interval": "hourly"}, consolidation={"interval": "daily"})
    ) == [
        (
            "memory.consolidation.interval",
            "disagrees with options.consolidation_interval (hourly)",
        )
    ]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (memory(backend="qdrant"), "memory.backend"),
        (memory(level="forever"), "memory.level"),
        (memory(unknown=1), "memory.unknown"),
        ({"extra_section": {}}, "extra_section"),
        (memory(storage={"data_dir": "/data/../etc"}), "memory.storage.data_dir"),
        (memory(storage={"data_dir": "C:\\data"}), "memory.storage.data_dir"),
        (memory(storage={"data_dir": "data\\memory"}), "memory.storage.data_dir"),
        (memory(storage={"data_dir": "  "}), "memory.storage.data_dir"),
        (memory(storage={"vector_store": "faiss"}), "memory.storage.vector_store"),
        (memory(options={"retention_days": 0}), "memory.options.retention_days"),
        (memory(options={"max_memories_per_agent": 0}), "memory.options.max_memories_per_agent"),
        (
            memory(options={"consolidation_interval": "yearly"}),
            "memory.options.consolidation_interval",
        ),
        (
            retrieval(fusion_strategy="linear", relevance_weight=0.5),
            "memory.retrieval.relevance_weight",
        ),
        (
            retrieval(relevance_weight=1.5, recency_weight=-0.5),
            "memory.retrieval.relevance_weight",
        ),
        (retrieval(max_memories=0), "memory.retrieval.max_memories"),
        (retrieval(max_memories=101), "memory.retrieval.max_memories"),
        (retrieval(min_relevance=1.1), "memory.retrieval.min_relevance"),
        (
            retrieval(fusion_strategy="rrf", rrf_k=0, personal_boost=0),
            "memory.retrieval.rrf_k",
        ),
        (
            retrieval(fusion_strategy="rrf", rrf_k=1001, personal_boost=0),
            "memory.retrieval.rrf_k",
        ),
        (retrieval(fusion_strategy="linear", rrf_k=30), "memory.retrieval.rrf_k"),
        (
            retrieval(fusion_strategy="rrf", personal_boost=0.2),
            "memory.retrieval.personal_boost",
        ),
        (retrieval(diversity_lambda=0.5), "memory.retrieval.diversity_lambda"),
        (retrieval(speaker_boost=-0.1), "memory.retrieval.speaker_boost"),
        (retrieval(speaker_boost=1.1), "memory.retrieval.speaker_boost"),
        (
            retrieval(fusion_strategy="linear", speaker_boost=0.3),
            "memory.retrieval.speaker_boost",
        ),
        (retrieval(candidate_pool_multiplier=5), "memory.retrieval.candidate_pool_multiplier"),
        (
            retrieval(strategy="tool_based", diversity_penalty_enabled=True),
            "memory.retrieval.diversity_penalty_enabled",
        ),
        (
            retrieval(query_reformulation_enabled=True),
            "memory.retrieval.query_reformulation_enabled",
        ),
        (retrieval(max_reformulation_rounds=3), "memory.retrieval.max_reformulation_rounds"),
        (
            retrieval(strategy="tool_based", retriever="hierarchical"),
            "memory.retrieval.retriever",
        ),
        (
            retrieval(strategy="self_editing", retriever="hierarchical"),
            "memory.retrieval.retriever",
        ),
        (
            retrieval(reflective_retry_enabled=True),
            "memory.retrieval.reflective_retry_enabled",
        ),
        (
            retrieval(strategy="self_editing", query_specific_rerank_enabled=True),
            "memory.retrieval.query_specific_rerank_enabled",
        ),
        (retrieval(max_workers_per_query=2), "memory.retrieval.max_workers_per_query"),
        (retrieval(max_workers_per_query=4), "memory.retrieval.max_workers_per_query"),
        (retrieval(max_retry_count=2), "memory.retrieval.max_retry_count"),
        (
            retrieval(retriever="hierarchical", max_retry_count=2),
            "memory.retrieval.max_retry_count",
        ),
        (
            retrieval(retriever="hierarchical", reflective_retry_enabled=True, max_retry_count=4),
            "memory.retrieval.max_retry_count",
        ),
        (memory(self_editing={"core_token_budget": 10}), "memory.self_editing.core_token_budget"),
        (
            memory(self_editing={"archival_write_categories": ["semantic", "semantic"]}),
            "memory.self_editing.archival_write_categories",
        ),
        (
            memory(self_editing={"allow_core_writes": "maybe"}),
            "memory.self_editing.allow_core_writes",
        ),
        (memory(self_editing={"core_budget": 100}), "memory.self_editing.core_budget"),
        (retrieval(rerank_cache_ttl_seconds=60), "memory.retrieval.rerank_cache_ttl_seconds"),
        (retrieval(recency_decay_rate=float("nan")), "memory.retrieval.recency_decay_rate"),
        (memory(embedder={"model": "text-embedding-3-small"}), "memory.embedder.dims"),
        (memory(embedder={"dims": 384}), "memory.embedder.dims"),
        (memory(embedder={"base_url": "http://x/v1"}), "memory.embedder.model"),
        (
            memory(fine_tune={"enabled": True, "base_model": "m"}),
            "memory.fine_tune.checkpoint_path",
        ),
        (
            memory(fine_tune={"checkpoint_path": "../ckpt"}),
            "memory.fine_tune.checkpoint_path",
        ),
        (
            memory(fine_tune={"evaluation_file": "../other-company/dev.jsonl"}),
            "memory.fine_tune.evaluation_file",
        ),
        (memory(fine_tune={"min_pairs": 50, "max_pairs": 40}), "memory.fine_tune.max_pairs"),
        (memory(fine_tune={"min_gain": -0.1}), "memory.fine_tune.min_gain"),
        (memory(fine_tune={"held_out_share": 1.0}), "memory.fine_tune.held_out_share"),
        (memory(fine_tune={"learning_rate": 0}), "memory.fine_tune.learning_rate"),
        (memory(procedural={"min_confidence": 2}), "memory.procedural.min_confidence"),
        (
            memory(procedural={"skill_md_directory": "a/../../b"}),
            "memory.procedural.skill_md_directory",
        ),
        (
            memory(
                consolidation={"retention": {"rules": [{"category": "dream", "retention_days": 3}]}}
            ),
            "memory.consolidation.retention.rules.0.category",
        ),
        (
            memory(
                consolidation={
                    "retention": {
                        "rules": [
                            {"category": "episodic", "retention_days": 3},
                            {"category": "episodic", "retention_days": 4},
                        ]
                    }
                }
            ),
            "memory.consolidation.retention.rules",
        ),
        (
            memory(consolidation={"archival": {"dual_mode": {"enabled": True}}}),
            "memory.consolidation.archival.dual_mode.summarization_model",
        ),
        (
            memory(consolidation={"archival": {"dual_mode": {"max_summary_tokens": 49}}}),
            "memory.consolidation.archival.dual_mode.max_summary_tokens",
        ),
        (
            memory(consolidation={"archival": {"dual_mode": {"anchor_length": 501}}}),
            "memory.consolidation.archival.dual_mode.anchor_length",
        ),
        (memory(consolidation={"strategy": "dual_mode"}), "memory.consolidation.strategy"),
        (memory(consolidation={"strategy": "magic"}), "memory.consolidation.strategy"),
        ({"org_memory": {"backend": "graph_rag"}}, "org_memory.backend"),
        ({"org_memory": {"core_policies": ["ok", " "]}}, "org_memory.core_policies.1"),
        (
            {"org_memory": {"extended_store": {"max_retrieved_per_query": 0}}},
            "org_memory.extended_store.max_retrieved_per_query",
        ),
        (
            {"org_memory": {"write_access": {"rules": {"gossip": {"human_allowed": True}}}}},
            "org_memory.write_access.rules.gossip.[key]",
        ),
        (
            {
                "org_memory": {
                    "write_access": {"rules": {"core_policy": {"allowed_seniority": "vp"}}}
                }
            },
            "org_memory.write_access.rules",
        ),
        (
            {"org_memory": {"write_access": {"rules": {"adr": {"allowed_seniority": "intern"}}}}},
            "org_memory.write_access.rules.adr.allowed_seniority",
        ),
    ],
)
def test_each_invalid_field_is_rejected_by_name(data, field):
    assert field in fields_of(data)


def test_error_message_is_readable():
    assert errors_of(retrieval(fusion_strategy="linear", relevance_weight=0.5)) == [
        (
            "memory.retrieval.relevance_weight",
            "relevance_weight + recency_weight must sum to 1.0",
        )
    ]
    with pytest.raises(CompanyConfigError, match=r"^memory\.retrieval\.relevance_weight: "):
        parse_company_config(retrieval(fusion_strategy="linear", relevance_weight=0.5))


def test_non_mapping_is_rejected():
    assert errors_of(["memory"]) == [("", "the configuration must be a mapping")]


def test_valid_combinations_are_accepted():
    config = parse_company_config(
        retrieval(
            fusion_strategy="rrf",
            rrf_k=20,
            personal_boost=0,
            diversity_penalty_enabled=True,
            diversity_lambda=0.5,
            candidate_pool_multiplier=4,
        )
    )
    assert config.memory.retrieval.rrf_k == 20
    config = parse_company_config(
        retrieval(
            strategy="tool_based", query_reformulation_enabled=True, max_reformulation_rounds=4
        )
    )
    assert config.memory.retrieval.max_reformulation_rounds == 4
    # the seeds' hierarchical retriever and re-ranker, with every knob that tunes them
    config = parse_company_config(
        retrieval(
            retriever="hierarchical",
            max_workers_per_query=2,
            reflective_retry_enabled=True,
            max_retry_count=3,
            query_specific_rerank_enabled=True,
            rerank_cache_ttl_seconds=60,
        )
    )
    assert config.memory.retrieval.max_retry_count == 3
    assert parse_company_config(config.model_dump(mode="json")) == config
    config = parse_company_config(
        retrieval(strategy="tool_based", query_specific_rerank_enabled=True)
    )
    assert config.memory.retrieval.query_specific_rerank_enabled
    config = parse_company_config(
        memory(embedder={"model": "text-embedding-3-small", "dims": 384, "base_url": "http://e/v1"})
    )
    assert config.memory.embedder.dims == 384


def test_agent_retention_overrides():
    overrides = AgentRetentionOverrides.model_validate(
        {"default_retention_days": 30, "rules": [{"category": "working", "retention_days": 1}]}
    )
    assert overrides.days_for("working") == 1
    assert overrides.days_for("semantic") is None
    with pytest.raises(ValueError):
        AgentRetentionOverrides.model_validate({"default_retention_days": 0})


def test_self_editing_config():
    config = parse_company_config(
        {
            "memory": {
                "retrieval": {"strategy": "self_editing"},
                "self_editing": {
                    "core_token_budget": 300,
                    "archival_search_limit": 5,
                    "archival_write_categories": ["episodic"],
                    "allow_core_writes": True,
                    "locked_agents": ["auditor"],
                },
            }
        }
    )
    settings = config.memory.self_editing
    assert (settings.core_token_budget, settings.archival_search_limit) == (300, 5)
    assert settings.archival_write_categories == ("episodic",)
    assert settings.core_writes_allowed("writer") and not settings.core_writes_allowed("auditor")
    assert parse_company_config({}).memory.self_editing.core_token_budget == 500


def test_linear_weights_without_a_strategy_select_linear_and_act():
    """The seeds' weights are the linear formula's: tuned without naming a strategy they
    select it (before: accepted under rrf and changing no ranking)."""
    config = parse_company_config(retrieval(relevance_weight=0.6, recency_weight=0.4))
    retrieval_config = config.memory.retrieval
    assert (retrieval_config.fusion_strategy, retrieval_config.relevance_weight) == ("linear", 0.6)
    assert retrieval_config.rrf_k == 60  # the linear defaults came with it
    # the defaults spelled out select nothing
    default = parse_company_config(retrieval(relevance_weight=0.7, recency_weight=0.3))
    assert default.memory.retrieval.fusion_strategy == "rrf"
    stored = parse_company_config(parse_company_config({}).model_dump(mode="json"))
    assert stored.memory.retrieval.fusion_strategy == "rrf"


@pytest.mark.parametrize(
    "knobs",
    [
        {"relevance_weight": 0.6, "recency_weight": 0.4},
        {"recency_weight": 0.5},
        {"recency_decay_rate": 0.5},
    ],
)
def test_linear_weights_under_rrf_are_refused(knobs):
    field = next(iter(knobs))
    assert errors_of(retrieval(fusion_strategy="rrf", **knobs)) == [
        (f"memory.retrieval.{field}", RRF_IGNORES_WEIGHT)
    ]
