"""Config values that changed nothing under the rest of the config are refused at load.

Before this rule a stored config could carry:

* the linear formula's ``relevance_weight`` / ``recency_weight`` / ``recency_decay_rate``
  under the ``rrf`` fusion (the legs' ranks decided the order);
* ``archival.dual_mode.enabled: true`` (or any ``dual_mode`` knob) under another
  consolidation strategy, and ``consolidation.llm`` knobs (but ``fallback_truncate_length``,
  which the simple strategy applies) under a strategy other than ``llm``.

None of them acted, so they are reset here to what ran (the default; ``dual_mode.enabled``
to false), so every stored config still parses and behaves as before. ``config_revision``
is bumped so cached parses are replaced, and each rewrite is audited like any config change
(``company.config_changed``, ``via`` ``migration``, the config before and after).
"""

import copy

from django.db import migrations
from django.utils import timezone

LINEAR_WEIGHTS = {"relevance_weight": 0.7, "recency_weight": 0.3, "recency_decay_rate": 0.01}
DUAL_MODE_DEFAULTS = {
    "dense_threshold": 0.5,
    "summarization_model": None,
    "max_summary_tokens": 200,
    "max_facts": 20,
    "anchor_length": 150,
}
LLM_DEFAULTS = {
    "group_threshold": 3,
    "temperature": 0.3,
    "max_summary_tokens": 500,
    "max_entry_input_chars": 2000,
    "max_total_user_content_chars": 20_000,
}


def _drop_non_defaults(section, defaults) -> bool:
    changed = False
    if isinstance(section, dict):
        for key, default in defaults.items():
            if key in section and section[key] != default:
                del section[key]
                changed = True
    return changed


def _retrieval(retrieval) -> bool:
    if not isinstance(retrieval, dict):
        return False
    # what the config meant before: linear only when named, or when personal_boost was set
    fusion = retrieval.get("fusion_strategy") or (
        "linear" if "personal_boost" in retrieval else "rrf"
    )
    if fusion != "rrf":
        return False
    changed = _drop_non_defaults(retrieval, LINEAR_WEIGHTS)
    if changed and "fusion_strategy" not in retrieval:
        retrieval["fusion_strategy"] = "rrf"  # what ran, whatever the remaining keys say
    return changed


def _consolidation(consolidation) -> bool:
    if not isinstance(consolidation, dict):
        return False
    strategy = consolidation.get("strategy") or "simple"
    changed = False
    archival = consolidation.get("archival")
    dual = archival.get("dual_mode") if isinstance(archival, dict) else None
    if strategy != "dual_mode" and isinstance(dual, dict):
        if dual.get("enabled"):
            dual["enabled"] = False
            changed = True
        changed |= _drop_non_defaults(dual, DUAL_MODE_DEFAULTS)
    if "strategy" not in consolidation and changed:
        consolidation["strategy"] = strategy
    if strategy != "llm":
        changed |= _drop_non_defaults(consolidation.get("llm"), LLM_DEFAULTS)
    return changed


def _clean(config) -> bool:
    memory = config.get("memory")
    if not isinstance(memory, dict):
        return False
    changed = _retrieval(memory.get("retrieval"))
    changed |= _consolidation(memory.get("consolidation"))
    return changed


def reset_values_that_never_acted(apps, schema_editor):
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
                    "reason": "values that changed nothing under the rest of the config were "
                    "reset to what ran (persistence 0010)",
                    "before": before,
                    "after": config,
                },
                created_at=timezone.now(),
            )


class Migration(migrations.Migration):
    dependencies = [("persistence", "0009_company_config_values_not_offered")]

    operations = [migrations.RunPython(reset_values_that_never_acted, migrations.RunPython.noop)]
