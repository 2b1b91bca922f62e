"""Knobs set while the setting they tune is off are refused at load (issue 33,
``config_value_needs_setting``): the evolver's rails with the evolver disabled, the wiki
export's and the experience compressor's keys with them off, fine-tuning's, extraction's and
dreams' keys with them off, the success-capture scores under ``capture.type: failure``,
``pruning.max_age_days`` / ``max_entries`` under a strategy that does not read them,
``propagation.max_propagation_targets`` under ``strategy: none``, and the consolidation
knobs (``strategy``, ``group_threshold``, ``archival.age_threshold_days``,
``llm.fallback_truncate_length``, and with them the dual-mode and llm strategies' keys) with
``archival.enabled: false``.

Stored configs carrying such a key with a value other than its default are rewritten without
it so they still parse (a key at its default, as a fully dumped config holds, is kept);
``config_revision`` is bumped and each rewrite is audited like any config change
(``company.config_changed``, ``via`` ``migration``, the config before and after), as
``0011`` does. The defaults below are the ones of this release.
"""

import copy

from django.db import migrations
from django.utils import timezone

WIKI_EXPORT = {
    "export_root": "wiki",
    "trigger": "on_consolidation",
    "include_raw_tier": True,
    "include_compressed_tier": True,
    "max_entries_per_view": None,
}
COMPRESSOR = {"model": None, "temperature": 0.2, "max_tokens": 400, "min_compression_ratio": 0.5}
EVOLVER = {
    "min_confidence_for_org_promotion": 0.8,
    "min_agents_seen_pattern": 3,
    "max_proposals_per_cycle": 10,
    "max_org_entries": 10000,
    "window_days": 7,
}
FINE_TUNE = {
    "checkpoint_path": None,
    "base_model": None,
    "training_data_dir": None,
    "evaluation_file": None,
    "min_gain": 0.01,
    "epochs": 10,
    "max_training_seconds": 900,
    "learning_rate": 0.001,
    "temperature": 0.05,
    "hard_negatives": 7,
    "held_out_share": 0.2,
    "min_pairs": 20,
    "max_pairs": 20000,
    "seed": 0,
    "auto_resume_after_minutes": 2,
    "max_auto_resumes": 3,
    "synthetic_queries_per_memory": 2,
    "max_synthetic_memories": 500,
}
EXTRACTION = {
    "store_turns": True,
    "model": None,
    "debounce_seconds": 30,
    "max_pending_tokens": 4000,
    "min_confidence": 0.5,
    "max_facts_per_run": 20,
    "max_batch_tokens": 8000,
    "relevant_memories": 10,
    "temperature": 0.0,
    "retry_backoff_seconds": 60,
}
DREAM = {
    "interval": "daily",
    "lookback_days": 7,
    "max_core_tokens": 600,
    "temperature": 0.2,
    "agent_request_interval_seconds": 3600,
    "company_requests_per_hour": 30,
}
DUAL_MODE = {
    "enabled": False,
    "dense_threshold": 0.5,
    "summarization_model": None,
    "max_summary_tokens": 200,
    "max_facts": 20,
    "anchor_length": 150,
}
LLM = {
    "group_threshold": 3,
    "temperature": 0.3,
    "max_summary_tokens": 500,
    "max_entry_input_chars": 2000,
    "max_total_user_content_chars": 20000,
    "fallback_truncate_length": 200,
}
SUCCESS_CAPTURE = {
    "min_quality_score": 8.0,
    "success_quality_percentile": 75.0,
    "percentile_window": 50,
}


def _section(parent, name):
    value = parent.get(name) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _drop(section, defaults):
    """Drop the keys of ``defaults`` that ``section`` sets to another value."""
    if section is None:
        return False
    gone = [k for k, default in defaults.items() if k in section and section[k] != default]
    for key in gone:
        del section[key]
    return bool(gone)


def _gated(section, defaults, *, on_by_default):
    if section is None or section.get("enabled", on_by_default) is True:
        return False
    return _drop(section, defaults)


def _procedural(procedural):
    changed = _gated(_section(procedural, "evolver"), EVOLVER, on_by_default=False)
    capture = _section(procedural, "capture")
    if capture is not None and capture.get("type", "failure") == "failure":
        changed |= _drop(capture, SUCCESS_CAPTURE)
    pruning = _section(procedural, "pruning")
    if pruning is not None:
        strategy = pruning.get("strategy", "hybrid")
        if strategy not in ("ttl", "hybrid"):
            changed |= _drop(pruning, {"max_age_days": 90})
        if strategy not in ("pareto", "hybrid"):
            changed |= _drop(pruning, {"max_entries": 100})
    propagation = _section(procedural, "propagation")
    if propagation is not None and propagation.get("strategy", "none") == "none":
        changed |= _drop(propagation, {"max_propagation_targets": 10})
    return changed


def _consolidation(consolidation):
    if consolidation is None:
        return False
    changed = _gated(_section(consolidation, "wiki_export"), WIKI_EXPORT, on_by_default=False)
    compressor = _section(consolidation, "experience_compressor")
    changed |= _gated(compressor, COMPRESSOR, on_by_default=False)
    archival = _section(consolidation, "archival")
    if archival is not None and archival.get("enabled", True) is False:
        changed |= _drop(consolidation, {"strategy": "simple", "group_threshold": 3})
        changed |= _drop(archival, {"age_threshold_days": 90})
        changed |= _drop(_section(archival, "dual_mode"), DUAL_MODE)
        changed |= _drop(_section(consolidation, "llm"), LLM)
    return changed


def _clean(config):
    memory = _section(config, "memory")
    if memory is None:
        return False
    changed = _consolidation(_section(memory, "consolidation"))
    changed |= _procedural(_section(memory, "procedural"))
    changed |= _gated(_section(memory, "fine_tune"), FINE_TUNE, on_by_default=False)
    changed |= _gated(_section(memory, "extraction"), EXTRACTION, on_by_default=True)
    changed |= _gated(_section(memory, "dream"), DREAM, on_by_default=True)
    return changed


def drop_knobs_whose_setting_is_off(apps, schema_editor):
    Company = apps.get_model("persistence", "Company")
    AuditEntry = apps.get_model("persistence", "AuditEntry")
    for company in Company.objects.order_by("pk").only("pk", "config", "config_revision"):
        config = company.config or {}
        before = copy.deepcopy(config)
        if isinstance(config, dict) and _clean(config):
            company.config = config
            company.config_revision += 1
            company.save(update_fields=["config", "config_revision"])
            AuditEntry.objects.create(
                company_id=company.pk,
                action_type="company.config_changed",
                target_type="company",
                target_id=str(company.pk),
                risk_level="medium",
                details={
                    "revision": company.config_revision,
                    "via": "migration",
                    "reason": "keys set while the setting they tune is off were dropped "
                    "(persistence 0013): they changed nothing",
                    "before": before,
                    "after": config,
                },
                created_at=timezone.now(),
            )


class Migration(migrations.Migration):
    dependencies = [("persistence", "0012_tenant_files_by_company_id")]

    operations = [migrations.RunPython(drop_knobs_whose_setting_is_off, migrations.RunPython.noop)]
