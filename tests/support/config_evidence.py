"""Evidence that every leaf field of the company config acts (issue 26: "no knob is
accepted and then ignored"); checked by tests/synthorg/test_every_config_field.py.

Each leaf path (``memory.retrieval.rrf_k``; a list's or mapping's item model adds its own
fields: ``memory.consolidation.retention.rules.action``) maps to one of:

* :class:`Acts` — pytest node ids of tests that set the field to a non-default value and
  assert the behaviour that changes (parametrized ids without their ``[..]`` part);
* :class:`Refused` — the node id of a test proving a non-default value is refused at
  config load with a precise error;
* :class:`Descriptive` — a field with exactly one accepted value (it names what runs), the
  reason, and the node id of a test showing other values are refused.

A test listed here is imported, never run, by the meta test: keep the evidence honest.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Acts:
    node_ids: tuple[str, ...]

    def __init__(self, *node_ids: str) -> None:
        object.__setattr__(self, "node_ids", node_ids)


@dataclass(frozen=True)
class Refused:
    node_id: str

    @property
    def node_ids(self) -> tuple[str, ...]:
        return (self.node_id,)


@dataclass(frozen=True)
class Descriptive:
    reason: str
    node_id: str

    @property
    def node_ids(self) -> tuple[str, ...]:
        return (self.node_id,)


KNOBS = "tests/persistence/test_config_knobs.py::"
NOT_OFFERED = KNOBS + "test_a_value_this_service_does_not_run_is_refused_saying_what_runs"
CONFIG = "tests/synthorg/test_company_config.py::"
CONTEXT = "tests/memory/core/retrieval/test_context.py::"
FUSE = "tests/memory/core/selectors/search/test_fuse.py::"
RANKING = "tests/memory/core/selectors/search/test_ranking_knobs.py::"
TEMPORAL = "tests/memory/core/retrieval/test_time_window_leg.py::"
HIER = "tests/memory/prompting/test_hierarchical.py::"
RERANK = "tests/memory/prompting/test_rerank.py::"
SELF_EDIT = "tests/memory/prompting/test_self_editing.py::"
MAINT = "tests/memory/core/maintenance/test_maintenance.py::"
LIFECYCLE = "tests/memory/core/maintenance/test_lifecycle_defaults.py::"
LLM_STRAT = "tests/memory/core/maintenance/test_llm_strategies.py::"
CONSOL = "tests/memory/core/maintenance/test_consolidation_knobs.py::"
COMPRESS = "tests/memory/procedural/test_compression.py::"
WIKI = "tests/memory/procedural/test_wiki_export.py::"
CAPTURE = "tests/memory/procedural/test_capture_pipeline.py::"
CAPTURE_STRAT = "tests/memory/procedural/test_capture_strategies.py::"
PRUNE = "tests/memory/procedural/test_pruning_strategies.py::"
PROPAGATE = "tests/memory/procedural/test_propagation.py::"
EVOLVER = "tests/memory/procedural/evolver/test_evolver.py::"
DRAFT_RETRY = "tests/memory/procedural/evolver/test_draft_retry.py::"
FINE_TUNE = "tests/memory/finetune/api/test_views.py::"
AUTO_RESUME = "tests/memory/finetune/test_recovery.py::"
SYNTHETIC = "tests/memory/finetune/test_synthetic.py::"
EXTRACTION = "tests/memory/ingestion/test_extraction.py::"
INGEST_KNOBS = "tests/memory/ingestion/test_ingestion_knobs.py::"
CONV = "tests/memory/ingestion/test_context.py::"
DREAM = "tests/memory/ingestion/test_dream_journal.py::"
DREAM_REQ = "tests/memory/ingestion/test_dream_requests.py::"
REQUEST_LOG = "tests/memory/interfaces/test_request_log.py::"
WRITE_ACCESS = "tests/orgmemory/test_write_access.py::"
REEMBED = (
    "tests/memory/core/test_reembed.py::test_switching_the_embedder_starts_one_job_with_totals"
)
SEED_SHAPE = "tests/synthorg/test_write_access_seed_shape.py::"

EVIDENCE: dict[str, Acts | Refused | Descriptive] = {
    # --- memory: what runs -------------------------------------------------------------
    "memory.backend": Descriptive(
        "names the one engine (pgvector); 'composite' and 'mem0' are refused saying why",
        NOT_OFFERED,
    ),
    "memory.level": Acts(KNOBS + "test_memory_level_is_the_default_level_of_new_agents"),
    "memory.storage.data_dir": Descriptive(
        "the seeds' default only: no directory is opened (storage is PostgreSQL)", NOT_OFFERED
    ),
    "memory.storage.vector_store": Descriptive("pgvector only", NOT_OFFERED),
    "memory.storage.history_store": Descriptive("postgresql only", NOT_OFFERED),
    # --- memory.options ------------------------------------------------------------------
    "memory.options.retention_days": Acts(
        KNOBS + "test_retention_days_option_archives_old_memories"
    ),
    "memory.options.max_memories_per_agent": Acts(
        EXTRACTION + "test_growth_is_bounded_through_the_archive"
    ),
    "memory.options.session_ttl_hours": Acts(
        "tests/memory/core/maintenance/test_session_ttl.py::"
        "test_default_config_expires_session_memories_after_24_hours_and_archives_them",
        "tests/memory/core/maintenance/test_session_ttl.py::"
        "test_session_ttl_hours_sets_the_expiry_and_bounds_the_callers_own",
    ),
    "memory.options.consolidation_interval": Acts(
        "tests/memory/core/maintenance/test_lifecycle_schedules.py::"
        "test_schedules_are_created_updated_and_removed_with_the_config"
    ),
    "memory.options.shared_knowledge_base": Acts(
        "tests/memory/interfaces/api/test_shared_sessions.py::"
        "test_publish_when_shared_knowledge_is_disabled",
        "tests/memory/interfaces/api/test_shared_sessions.py::"
        "test_shared_knowledge_off_closes_every_shared_read",
        "tests/memory/procedural/test_org_pool.py::"
        "test_a_pool_item_cannot_be_approved_once_shared_knowledge_is_off",
        "tests/memory/procedural/test_org_pool.py::"
        "test_no_shared_knowledge_means_no_pool_and_the_scope_is_narrowed",
    ),
    # --- memory.retrieval ----------------------------------------------------------------
    "memory.retrieval.strategy": Acts(
        "tests/memory/interfaces/api/test_non_inferable.py::"
        "test_the_strategies_instructions_carry_the_guidance"
    ),
    "memory.retrieval.relevance_weight": Acts(
        RANKING + "test_linear_weights_change_the_order",
        CONFIG + "test_linear_weights_without_a_strategy_select_linear_and_act",
        CONFIG + "test_linear_weights_under_rrf_are_refused",
    ),
    "memory.retrieval.recency_weight": Acts(
        RANKING + "test_linear_weights_change_the_order",
        CONFIG + "test_linear_weights_without_a_strategy_select_linear_and_act",
        CONFIG + "test_linear_weights_under_rrf_are_refused",
    ),
    "memory.retrieval.recency_decay_rate": Acts(
        RANKING + "test_recency_decay_rate_is_the_companys",
        CONFIG + "test_linear_weights_under_rrf_are_refused",
    ),
    "memory.retrieval.personal_boost": Acts(RANKING + "test_personal_boost_is_added_to_relevance"),
    "memory.retrieval.min_relevance": Acts(RANKING + "test_min_relevance_is_the_companys_default"),
    "memory.retrieval.max_memories": Acts(CONTEXT + "test_mmr_promotes_the_diverse_entry"),
    "memory.retrieval.include_shared": Acts(
        RANKING + "test_include_shared_is_the_default_of_a_search"
    ),
    "memory.retrieval.default_relevance": Acts(
        RANKING + "test_default_relevance_scores_a_row_without_a_vector"
    ),
    "memory.retrieval.injection_point": Acts(
        CONTEXT + "test_planted_instructions_cannot_close_the_fence",
        SELF_EDIT + "test_core_memory_goes_where_injection_point_says",
        NOT_OFFERED,  # 'user' with strategy tool_based, which injects no memories
    ),
    "memory.retrieval.non_inferable_only": Acts(
        CONTEXT + "test_non_inferable_only_filters_before_packing"
    ),
    "memory.retrieval.fusion_strategy": Acts(
        FUSE + "test_a_company_without_config_ranks_by_rrf_over_both_legs",
        FUSE + "test_linear_ranking_uses_cosine_boost_and_recency",
    ),
    "memory.retrieval.rrf_k": Acts(RANKING + "test_rrf_k_is_the_companys"),
    "memory.retrieval.speaker_boost": Acts(
        "tests/memory/core/selectors/search/test_speakers.py::test_speaker_boost_zero_turns_it_off",
        "tests/memory/core/selectors/search/test_speakers.py::"
        "test_a_question_naming_a_speaker_ranks_their_turns_higher",
    ),
    "memory.retrieval.time_window_legs": Acts(
        TEMPORAL + "test_a_memory_inside_the_anchors_window_is_found_first",
        TEMPORAL + "test_time_window_legs_off_keeps_the_two_legs_order",
    ),
    "memory.retrieval.latest_boost": Acts(
        TEMPORAL + "test_latest_boost_ranks_the_newest_first_for_a_current_question",
        TEMPORAL + "test_latest_boost_zero_is_off",
    ),
    "memory.retrieval.session_spread": Acts(
        TEMPORAL + "test_session_spread_takes_another_session_before_a_second_turn"
    ),
    "memory.retrieval.diversity_penalty_enabled": Acts(
        CONTEXT + "test_mmr_promotes_the_diverse_entry"
    ),
    "memory.retrieval.diversity_lambda": Acts(
        CONTEXT + "test_diversity_lambda_trades_relevance_for_novelty"
    ),
    "memory.retrieval.candidate_pool_multiplier": Acts(
        CONTEXT + "test_candidate_pool_multiplier_widens_what_mmr_sees"
    ),
    "memory.retrieval.query_reformulation_enabled": Acts(
        "tests/memory/prompting/test_search_and_ask.py::test_search_memory_reformulates_twice"
    ),
    "memory.retrieval.max_reformulation_rounds": Acts(
        "tests/memory/prompting/test_search_and_ask.py::"
        "test_search_memory_stops_at_the_companys_max_reformulation_rounds"
    ),
    "memory.retrieval.retriever": Acts(
        HIER + "test_without_an_llm_the_cue_words_route_within_max_workers"
    ),
    "memory.retrieval.max_workers_per_query": Acts(
        HIER + "test_without_an_llm_the_cue_words_route_within_max_workers",
        HIER + "test_every_worker_runs_and_merges_when_the_bound_allows",
    ),
    "memory.retrieval.reflective_retry_enabled": Acts(
        HIER + "test_without_an_llm_a_poor_result_retries_with_corrections_up_to_the_count"
    ),
    "memory.retrieval.max_retry_count": Acts(
        HIER + "test_without_an_llm_a_poor_result_retries_with_corrections_up_to_the_count"
    ),
    "memory.retrieval.query_specific_rerank_enabled": Acts(
        RERANK + "test_the_llm_order_replaces_the_fused_one_keeping_the_score_scale"
    ),
    "memory.retrieval.rerank_cache_ttl_seconds": Acts(
        RERANK + "test_the_cache_lives_for_rerank_cache_ttl_seconds"
    ),
    # --- memory.self_editing -------------------------------------------------------------
    "memory.self_editing.core_token_budget": Acts(
        SELF_EDIT + "test_core_budget_refuses_overflow_and_allows_replacing"
    ),
    "memory.self_editing.archival_search_limit": Acts(SELF_EDIT + "test_archival_tools"),
    "memory.self_editing.archival_write_categories": Acts(SELF_EDIT + "test_archival_tools"),
    "memory.self_editing.allow_core_writes": Acts(SELF_EDIT + "test_core_writes_can_be_locked"),
    "memory.self_editing.locked_agents": Acts(SELF_EDIT + "test_core_writes_can_be_locked"),
    # --- memory.consolidation ------------------------------------------------------------
    "memory.consolidation.enabled": Acts(MAINT + "test_kill_switch_pauses_the_whole_cycle"),
    "memory.consolidation.interval": Acts(
        "tests/memory/core/test_company_schedules.py::"
        "test_the_configured_interval_is_used_and_never_means_no_schedule"
    ),
    "memory.consolidation.strategy": Acts(
        LLM_STRAT + "test_dual_mode_routes_by_density",
        LLM_STRAT + "test_llm_strategy_synthesises_per_group",
    ),
    "memory.consolidation.group_threshold": Acts(CONSOL + "test_group_threshold_is_the_companys"),
    "memory.consolidation.max_memories_per_agent": Acts(
        MAINT + "test_maintenance_run_counts_match_exactly"
    ),
    "memory.consolidation.retention.rules.category": Acts(
        "tests/memory/core/maintenance/test_retention_resolution.py::test_resolution_chain"
    ),
    "memory.consolidation.retention.rules.retention_days": Acts(
        "tests/memory/core/maintenance/test_retention_resolution.py::test_resolution_chain"
    ),
    "memory.consolidation.retention.rules.action": Acts(
        LIFECYCLE + "test_explicit_delete_rule_deletes_live_and_archived_for_good_audited"
    ),
    "memory.consolidation.retention.default_retention_days": Acts(
        KNOBS + "test_retention_days_option_archives_old_memories",
        LIFECYCLE + "test_a_default_retention_archives_unless_told_to_delete",
    ),
    "memory.consolidation.retention.default_action": Acts(
        LIFECYCLE + "test_a_default_retention_archives_unless_told_to_delete"
    ),
    "memory.consolidation.archival.enabled": Acts(
        MAINT + "test_archival_disabled_leaves_old_memories_live_and_whole"
    ),
    "memory.consolidation.archival.age_threshold_days": Acts(
        CONSOL + "test_age_threshold_days_is_the_companys"
    ),
    "memory.consolidation.archival.dual_mode.enabled": Acts(
        LLM_STRAT + "test_dual_mode_routes_by_density",
        CONSOL + "test_dual_mode_enabled_alone_selects_the_dual_mode_strategy",
        CONSOL + "test_a_strategys_knob_under_another_strategy_is_refused",
    ),
    "memory.consolidation.archival.dual_mode.dense_threshold": Acts(
        CONSOL + "test_dual_mode_dense_threshold_routes_the_group"
    ),
    "memory.consolidation.archival.dual_mode.summarization_model": Acts(
        LLM_STRAT + "test_dual_mode_routes_by_density"
    ),
    "memory.consolidation.archival.dual_mode.max_summary_tokens": Acts(
        CONSOL + "test_dual_mode_limits_are_the_companys"
    ),
    "memory.consolidation.archival.dual_mode.max_facts": Acts(
        CONSOL + "test_dual_mode_limits_are_the_companys",
        CONSOL + "test_a_strategys_knob_under_another_strategy_is_refused",
    ),
    "memory.consolidation.archival.dual_mode.anchor_length": Acts(
        CONSOL + "test_dual_mode_limits_are_the_companys"
    ),
    "memory.consolidation.llm.group_threshold": Acts(
        CONSOL + "test_llm_group_threshold_above_the_consolidation_one_applies",
        CONSOL + "test_llm_group_threshold_that_would_change_nothing_is_refused",
    ),
    "memory.consolidation.llm.temperature": Acts(
        CONSOL + "test_llm_request_limits_are_the_companys",
        CONSOL + "test_a_strategys_knob_under_another_strategy_is_refused",
    ),
    "memory.consolidation.llm.max_summary_tokens": Acts(
        CONSOL + "test_llm_request_limits_are_the_companys",
        CONSOL + "test_a_strategys_knob_under_another_strategy_is_refused",
    ),
    "memory.consolidation.llm.max_entry_input_chars": Acts(
        CONSOL + "test_llm_request_limits_are_the_companys"
    ),
    "memory.consolidation.llm.max_total_user_content_chars": Acts(
        CONSOL + "test_llm_request_limits_are_the_companys"
    ),
    "memory.consolidation.llm.fallback_truncate_length": Acts(
        CONSOL + "test_fallback_truncate_length_is_the_companys"
    ),
    "memory.consolidation.experience_compressor.enabled": Acts(
        COMPRESS + "test_disabled_by_default_409_and_nothing_written",
        COMPRESS + "test_with_the_stand_in_llm",
        COMPRESS + "test_the_compressor_is_scheduled_at_the_consolidation_interval",
        COMPRESS + "test_learnings_are_searched_and_injected_as_procedural_memories",
    ),
    "memory.consolidation.experience_compressor.model": Acts(
        COMPRESS + "test_with_the_stand_in_llm"
    ),
    "memory.consolidation.experience_compressor.temperature": Acts(
        COMPRESS + "test_with_the_stand_in_llm"
    ),
    "memory.consolidation.experience_compressor.max_tokens": Acts(
        COMPRESS + "test_with_the_stand_in_llm"
    ),
    "memory.consolidation.experience_compressor.min_compression_ratio": Acts(
        COMPRESS + "test_below_min_compression_ratio_is_skipped_and_recorded",
        COMPRESS + "test_min_compression_ratio_zero_keeps_everything",
    ),
    "memory.consolidation.wiki_export.enabled": Acts(
        WIKI + "test_disabled_by_default",
        WIKI + "test_manual_export_writes_three_views_and_downloads_as_zip",
    ),
    "memory.consolidation.wiki_export.export_root": Acts(
        WIKI + "test_manual_export_writes_three_views_and_downloads_as_zip"
    ),
    "memory.consolidation.wiki_export.trigger": Acts(
        WIKI + "test_exported_after_consolidation_only_when_triggered_so"
    ),
    "memory.consolidation.wiki_export.include_raw_tier": Acts(
        WIKI + "test_views_can_be_left_out_capped_and_a_new_export_replaces_the_old"
    ),
    "memory.consolidation.wiki_export.include_compressed_tier": Acts(
        WIKI + "test_views_can_be_left_out_capped_and_a_new_export_replaces_the_old"
    ),
    "memory.consolidation.wiki_export.max_entries_per_view": Acts(
        WIKI + "test_views_can_be_left_out_capped_and_a_new_export_replaces_the_old"
    ),
    # --- memory.embedder -----------------------------------------------------------------
    "memory.embedder.provider": Refused(NOT_OFFERED),
    "memory.embedder.model": Acts(REEMBED),
    "memory.embedder.dims": Acts(
        REEMBED, KNOBS + "test_embedder_dims_no_index_can_hold_are_refused"
    ),
    "memory.embedder.base_url": Acts(
        REEMBED,
        "tests/synthorg/test_outbound.py::"
        "test_a_resolved_allow_listed_address_connects_with_the_original_host_header",
    ),
    "memory.embedder.api_key_env": Acts(
        KNOBS + "test_an_ungranted_secret_is_refused_at_use_and_never_sent"
    ),
    # --- memory.chunking ---------------------------------------------------------------
    "memory.chunking.max_chunks": Acts(
        "tests/memory/core/test_chunks.py::test_max_chunks_is_honoured"
    ),
    "memory.chunking.context_chars": Acts(
        "tests/memory/core/test_chunks.py::test_context_chars_is_the_companys"
    ),
    # --- memory.procedural ---------------------------------------------------------------
    "memory.procedural.enabled": Acts(CAPTURE + "test_procedural_disabled_captures_nothing"),
    "memory.procedural.model": Acts(CAPTURE + "test_configured_model_and_sampling_are_sent"),
    "memory.procedural.temperature": Acts(CAPTURE + "test_configured_model_and_sampling_are_sent"),
    "memory.procedural.max_tokens": Acts(CAPTURE + "test_configured_model_and_sampling_are_sent"),
    "memory.procedural.min_confidence": Acts(CAPTURE + "test_below_min_confidence_is_dropped"),
    "memory.procedural.skill_md_directory": Acts(
        "tests/memory/procedural/test_skill_md.py::test_unwritable_directory_keeps_the_lesson"
    ),
    "memory.procedural.capture.type": Acts(
        CAPTURE + "test_success_path_uses_its_own_prompt_and_tag"
    ),
    "memory.procedural.capture.min_quality_score": Acts(CAPTURE_STRAT + "test_custom_thresholds"),
    "memory.procedural.capture.success_quality_percentile": Acts(
        CAPTURE_STRAT + "test_custom_thresholds"
    ),
    "memory.procedural.capture.percentile_window": Acts(
        CAPTURE + "test_percentile_window_is_the_companys"
    ),
    "memory.procedural.pruning.strategy": Acts(PRUNE + "test_ttl_uses_last_use"),
    "memory.procedural.pruning.max_age_days": Acts(PRUNE + "test_ttl_custom_age"),
    "memory.procedural.pruning.max_entries": Acts(PRUNE + "test_hybrid_ttl_then_pareto"),
    "memory.procedural.propagation.strategy": Acts(PROPAGATE + "test_department_scope_with_cap"),
    "memory.procedural.propagation.max_propagation_targets": Acts(
        PROPAGATE + "test_department_scope_with_cap"
    ),
    "memory.procedural.evolver.enabled": Acts(
        EVOLVER + "test_disabled_by_default",
        EVOLVER + "test_cycle_emits_one_promotion_and_writes_no_org_fact",
        NOT_OFFERED,  # true with consolidation.interval 'never': the evolver has no schedule
    ),
    "memory.procedural.evolver.requires_human_approval": Descriptive(
        "Literal[True]: no configuration lets the evolver write org memory itself",
        EVOLVER + "test_requires_human_approval_cannot_be_false",
    ),
    "memory.procedural.evolver.min_confidence_for_org_promotion": Acts(
        EVOLVER + "test_default_threshold_keeps_a_075_pattern_out"
    ),
    "memory.procedural.evolver.min_agents_seen_pattern": Acts(
        DRAFT_RETRY + "test_a_pattern_no_longer_eligible_is_superseded"
    ),
    "memory.procedural.evolver.max_proposals_per_cycle": Acts(
        EVOLVER + "test_pending_pattern_is_not_reproposed_and_cap_applies"
    ),
    "memory.procedural.evolver.max_org_entries": Acts(
        EVOLVER + "test_max_org_entries_stops_emission"
    ),
    "memory.procedural.evolver.window_days": Acts(
        EVOLVER + "test_evolver_window_days_is_the_companys"
    ),
    # --- memory.redaction ----------------------------------------------------------------
    "memory.redaction.disabled_patterns": Acts(
        "tests/synthorg/test_redaction.py::test_company_config_section"
    ),
    "memory.redaction.extra_patterns": Acts(
        "tests/synthorg/test_redaction.py::test_company_config_section",
        "tests/memory/interfaces/api/test_procedural.py::test_company_redaction_config_applies",
    ),
    # --- memory.fine_tune ----------------------------------------------------------------
    "memory.fine_tune.enabled": Acts(FINE_TUNE + "test_preflight_reports_and_start_refuses"),
    "memory.fine_tune.checkpoint_path": Acts(
        FINE_TUNE + "test_a_run_trains_evaluates_and_activates_an_adapter_search_then_uses"
    ),
    "memory.fine_tune.base_model": Acts(FINE_TUNE + "test_preflight_reports_and_start_refuses"),
    "memory.fine_tune.training_data_dir": Acts(
        FINE_TUNE + "test_labelled_pairs_from_training_data_dir"
    ),
    "memory.fine_tune.evaluation_file": Acts(
        FINE_TUNE + "test_dev_questions_gate_promotion",
        "tests/memory/finetune/test_evaluation_file.py::test_a_missing_evaluation_file_is_refused",
    ),
    "memory.fine_tune.min_gain": Acts(
        FINE_TUNE + "test_margin_refuses_an_adapter_that_does_not_clear_it"
    ),
    "memory.fine_tune.epochs": Acts(FINE_TUNE + "test_training_parameters_are_the_companys"),
    "memory.fine_tune.max_training_seconds": Acts(
        FINE_TUNE + "test_training_parameters_are_the_companys"
    ),
    "memory.fine_tune.learning_rate": Acts(FINE_TUNE + "test_training_parameters_are_the_companys"),
    "memory.fine_tune.temperature": Acts(FINE_TUNE + "test_training_parameters_are_the_companys"),
    "memory.fine_tune.hard_negatives": Acts(
        FINE_TUNE + "test_training_parameters_are_the_companys"
    ),
    "memory.fine_tune.held_out_share": Acts(
        FINE_TUNE + "test_training_parameters_are_the_companys"
    ),
    "memory.fine_tune.min_pairs": Acts(FINE_TUNE + "test_preflight_reports_and_start_refuses"),
    "memory.fine_tune.max_pairs": Acts(
        "tests/memory/procedural/test_training_pairs.py::"
        "test_lessons_are_a_registered_pair_source_and_mined_with_redaction"
    ),
    "memory.fine_tune.auto_resume_after_minutes": Acts(
        AUTO_RESUME + "test_max_auto_resumes_zero_fails_at_once_and_the_lease_is_the_companys"
    ),
    "memory.fine_tune.max_auto_resumes": Acts(
        AUTO_RESUME + "test_attempts_are_bounded_by_the_retry_policy_then_the_run_fails",
        AUTO_RESUME + "test_max_auto_resumes_zero_fails_at_once_and_the_lease_is_the_companys",
    ),
    "memory.fine_tune.seed": Acts(FINE_TUNE + "test_training_parameters_are_the_companys"),
    "memory.fine_tune.synthetic_queries_per_memory": Acts(
        SYNTHETIC + "test_questions_per_memory_are_generated_redacted_then_trained_on",
        SYNTHETIC + "test_the_knobs_bound_the_memories_and_questions_and_zero_disables",
    ),
    "memory.fine_tune.max_synthetic_memories": Acts(
        SYNTHETIC + "test_the_knobs_bound_the_memories_and_questions_and_zero_disables"
    ),
    # --- memory.extraction / conversation / dream ---------------------------------------
    "memory.extraction.enabled": Acts(
        EXTRACTION + "test_extraction_disabled_stores_messages_without_runs"
    ),
    "memory.extraction.store_turns": Acts(
        EXTRACTION + "test_by_default_the_turns_are_stored_first_and_the_llms_facts_on_top"
    ),
    "memory.extraction.model": Acts(INGEST_KNOBS + "test_extraction_request_is_the_companys"),
    "memory.extraction.debounce_seconds": Acts(
        EXTRACTION + "test_a_burst_of_twenty_flushes_makes_one_extraction"
    ),
    "memory.extraction.max_pending_tokens": Acts(
        EXTRACTION + "test_pending_tokens_over_the_limit_make_it_due_at_once"
    ),
    "memory.extraction.min_confidence": Acts(
        EXTRACTION + "test_facts_below_min_confidence_are_dropped"
    ),
    "memory.extraction.max_facts_per_run": Acts(
        INGEST_KNOBS + "test_extraction_request_is_the_companys"
    ),
    "memory.extraction.max_batch_tokens": Acts(
        EXTRACTION + "test_batches_are_capped_and_the_rest_stays_due"
    ),
    "memory.extraction.relevant_memories": Acts(
        INGEST_KNOBS + "test_extraction_request_is_the_companys"
    ),
    "memory.extraction.temperature": Acts(INGEST_KNOBS + "test_extraction_request_is_the_companys"),
    "memory.extraction.retry_backoff_seconds": Acts(
        INGEST_KNOBS + "test_retry_backoff_seconds_is_the_companys"
    ),
    "memory.conversation.summary_threshold_tokens": Acts(
        CONV + "test_llm_summary_is_updated_incrementally_over_the_threshold"
    ),
    "memory.conversation.max_summary_tokens": Acts(
        INGEST_KNOBS + "test_conversation_max_summary_tokens_is_the_companys"
    ),
    "memory.dream.enabled": Acts(DREAM_REQ + "test_refusals_422"),
    "memory.dream.interval": Acts(
        "tests/memory/ingestion/test_schedules.py::"
        "test_sync_creates_the_sweep_and_one_dream_schedule_per_company"
    ),
    "memory.dream.lookback_days": Acts(INGEST_KNOBS + "test_dream_request_is_the_companys"),
    "memory.dream.max_core_tokens": Acts(
        INGEST_KNOBS + "test_dream_request_is_the_companys",
        DREAM + "test_an_llm_core_longer_than_max_core_tokens_is_cut_at_a_word",
        DREAM + "test_the_extractive_core_keeps_the_newest_facts_within_max_core_tokens",
    ),
    "memory.dream.temperature": Acts(INGEST_KNOBS + "test_dream_request_is_the_companys"),
    "memory.dream.agent_request_interval_seconds": Acts(DREAM_REQ + "test_the_interval_knob_acts"),
    "memory.dream.company_requests_per_hour": Acts(
        DREAM_REQ + "test_company_limit_counts_every_agent_of_the_company"
    ),
    # --- memory.request_log / namespace_templates ----------------------------------------
    "memory.request_log.enabled": Acts(REQUEST_LOG + "test_disabled_log_records_nothing"),
    "memory.request_log.max_entries": Acts(
        REQUEST_LOG + "test_retention_keeps_the_newest_within_age_per_company"
    ),
    "memory.request_log.max_age_days": Acts(
        REQUEST_LOG + "test_retention_keeps_the_newest_within_age_per_company"
    ),
    "memory.namespace_templates.parts": Acts(
        "tests/memory/interfaces/api/test_namespaces.py::test_custom_templates_from_the_company_config"
    ),
    # --- org_memory ----------------------------------------------------------------------
    "org_memory.backend": Descriptive("hybrid_prompt_retrieval only", NOT_OFFERED),
    "org_memory.core_policies": Acts(
        "tests/orgmemory/test_policies_service.py::"
        "test_a_human_config_save_versions_the_list_and_stores_none"
    ),
    "org_memory.core_policies_token_warning": Acts(
        "tests/orgmemory/test_policies_console.py::test_the_warning_threshold_is_the_configs"
    ),
    "org_memory.extended_store.backend": Descriptive("postgresql only", NOT_OFFERED),
    "org_memory.extended_store.max_retrieved_per_query": Acts(
        "tests/orgmemory/selectors/test_retrieval.py::"
        "test_bm25_ranks_by_relevance_and_respects_categories_and_limit"
    ),
    "org_memory.write_access.rules.allowed_seniority": Acts(
        WRITE_ACCESS + "test_rules_come_from_the_config"
    ),
    "org_memory.write_access.rules.allowed_roles": Acts(
        WRITE_ACCESS + "test_allowed_roles_admit_only_those_roles_case_and_spacing_aside",
        "tests/orgmemory/test_api.py::"
        "test_role_department_and_autonomy_rules_hold_on_the_rest_write_path",
    ),
    "org_memory.write_access.rules.allowed_departments": Acts(
        WRITE_ACCESS + "test_allowed_departments_admit_only_those_departments",
        "tests/orgmemory/test_api.py::"
        "test_role_department_and_autonomy_rules_hold_on_the_rest_write_path",
    ),
    "org_memory.write_access.rules.min_autonomy": Acts(
        WRITE_ACCESS + "test_min_autonomy_admits_that_autonomy_and_above",
        "tests/orgmemory/test_api.py::"
        "test_role_department_and_autonomy_rules_hold_on_the_rest_write_path",
    ),
    "org_memory.write_access.rules.human_allowed": Acts(
        WRITE_ACCESS + "test_rules_come_from_the_config",
        SEED_SHAPE + "test_the_seed_shape_becomes_rules_and_is_stored_as_rules",
    ),
}


# --- the setting each field needs ---------------------------------------------------------
# A field that acts only under another setting is refused when set alone on the default
# config (``config_value_needs_setting`` / ``config_value_not_offered``); here is the setting
# it acts under (the longest matching prefix wins; ``{}``: none), to be merged into the
# default config with the field's probe value. Its evidence above then shows its effect under
# that setting. A field named here that loads alone fails the test (unless it is the
# setting itself, as ``evolver.enabled`` is).


def _memory(**sections: object) -> dict:
    return {"memory": sections}


_FINE_TUNE_ON = {"enabled": True, "checkpoint_path": "adapters", "base_model": "all-MiniLM-L6-v2"}

ENABLING: dict[str, dict] = {
    "memory.procedural.evolver.": _memory(procedural={"evolver": {"enabled": True}}),
    "memory.consolidation.wiki_export.": _memory(consolidation={"wiki_export": {"enabled": True}}),
    "memory.consolidation.experience_compressor.": _memory(
        consolidation={"experience_compressor": {"enabled": True}}
    ),
    "memory.consolidation.archival.dual_mode.": _memory(
        consolidation={"archival": {"dual_mode": {"enabled": True, "summarization_model": "m"}}}
    ),
    "memory.consolidation.llm.": _memory(consolidation={"strategy": "llm"}),
    # ... but for the truncation that the simple strategy applies too
    "memory.consolidation.llm.fallback_truncate_length": {},
    "memory.fine_tune.": _memory(fine_tune=_FINE_TUNE_ON),
    "memory.procedural.capture.": _memory(procedural={"capture": {"type": "success"}}),
    "memory.procedural.propagation.": _memory(procedural={"propagation": {"strategy": "role"}}),
    "memory.retrieval.diversity_lambda": _memory(retrieval={"diversity_penalty_enabled": True}),
    "memory.retrieval.candidate_pool_multiplier": _memory(
        retrieval={"diversity_penalty_enabled": True}
    ),
    "memory.retrieval.query_reformulation_enabled": _memory(retrieval={"strategy": "tool_based"}),
    "memory.retrieval.max_reformulation_rounds": _memory(
        retrieval={"strategy": "tool_based", "query_reformulation_enabled": True}
    ),
    "memory.retrieval.max_workers_per_query": _memory(retrieval={"retriever": "hierarchical"}),
    "memory.retrieval.reflective_retry_enabled": _memory(retrieval={"retriever": "hierarchical"}),
    "memory.retrieval.max_retry_count": _memory(
        retrieval={"retriever": "hierarchical", "reflective_retry_enabled": True}
    ),
    "memory.retrieval.rerank_cache_ttl_seconds": _memory(
        retrieval={"query_specific_rerank_enabled": True}
    ),
    # the linear formula's weights sum to 1: one moves with the other
    "memory.retrieval.relevance_weight": _memory(
        retrieval={"relevance_weight": 0.6, "recency_weight": 0.4}
    ),
    "memory.retrieval.recency_weight": _memory(
        retrieval={"relevance_weight": 0.6, "recency_weight": 0.4}
    ),
    # an OpenAI-compatible embedder is named by all three together
    "memory.embedder.": _memory(
        embedder={"base_url": "http://embedder.internal/v1", "model": "e5", "dims": 384}
    ),
    "memory.consolidation.retention.default_action": _memory(
        consolidation={"retention": {"default_retention_days": 30}}
    ),
}

#: A value other than the default for fields whose type suggests none the config accepts
#: (a model name, a path, an id, a bounded number); the rest are derived from the type.
PROBE_VALUES: dict[str, object] = {
    "memory.retrieval.relevance_weight": 0.6,
    "memory.retrieval.recency_weight": 0.4,
    "memory.retrieval.max_workers_per_query": 2,
    "memory.retrieval.max_retry_count": 2,
    "memory.retrieval.candidate_pool_multiplier": 4,
    "memory.retrieval.max_reformulation_rounds": 3,
    "memory.retrieval.rerank_cache_ttl_seconds": 600,
    "memory.consolidation.archival.dual_mode.summarization_model": "summarizer-1",
    "memory.consolidation.archival.dual_mode.max_summary_tokens": 300,
    "memory.consolidation.archival.dual_mode.anchor_length": 200,
    "memory.consolidation.llm.group_threshold": 5,
    "memory.consolidation.llm.max_summary_tokens": 600,
    "memory.consolidation.llm.max_entry_input_chars": 3000,
    "memory.consolidation.llm.max_total_user_content_chars": 30000,
    "memory.embedder.model": "text-embedding-3-small",
    "memory.embedder.dims": 1536,
    "memory.embedder.base_url": "http://embedder.internal/v1",
    "memory.embedder.api_key_env": "SYNTHORG_SECRET_EMBEDDER",
    "memory.consolidation.strategy": "llm",
    "memory.redaction.disabled_patterns": ["bearer_token"],
    "memory.redaction.extra_patterns": {"TICKET": "TCK-[0-9]+"},
    "memory.self_editing.archival_write_categories": ["semantic"],
    "memory.fine_tune.checkpoint_path": "adapters-2",
    "memory.fine_tune.base_model": "all-MiniLM-L6-v2",
    "memory.fine_tune.training_data_dir": "pairs",
    "memory.fine_tune.evaluation_file": "dev.jsonl",
    "memory.fine_tune.enabled": True,
}

#: Fields of a list's or mapping's item model: each item is its own rule, so a field has no
#: "set alone" form on the default config; their evidence above sets whole items.
ITEM_FIELDS = (
    "memory.consolidation.retention.rules.",
    "org_memory.write_access.rules.",
    "memory.namespace_templates.",
)
