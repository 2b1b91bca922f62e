"""Config keys naming something this service does not run are refused at load.

Configs saved before that rule could carry the seeds' ``memory.backend: mem0``, a Qdrant or
SQLite store, a ``data_dir``, ``org_memory.extended_store.backend: sqlite``, an embedder
``provider``, or an embedder ``model``/``dims`` without a ``base_url``: none of them ever
changed what the service did. They are dropped here (the defaults are what ran) so every
stored config still parses; ``config_revision`` is bumped so cached parses are replaced, and
each rewrite is audited like any config change (``company.config_changed``, ``via``
``migration``, the config before and after), so an operator can see what went and why.
"""

import copy

from django.db import migrations
from django.utils import timezone

MEMORY_OFFERED = {"backend": "pgvector"}
STORAGE_OFFERED = {
    "vector_store": "pgvector",
    "history_store": "postgresql",
    "data_dir": "/data/memory",
}


def _drop_not_offered(section, offered):
    changed = False
    if isinstance(section, dict):
        for key, value in offered.items():
            if key in section and section[key] != value:
                del section[key]
                changed = True
    return changed


def _clean(config):
    changed = False
    memory = config.get("memory")
    if isinstance(memory, dict):
        changed |= _drop_not_offered(memory, MEMORY_OFFERED)
        changed |= _drop_not_offered(memory.get("storage"), STORAGE_OFFERED)
        embedder = memory.get("embedder")
        if isinstance(embedder, dict):
            if embedder.get("provider") is not None:
                del embedder["provider"]
                changed = True
            if embedder.get("base_url") is None:
                # without a base_url the local embedder ran: nothing else there acted
                memory["embedder"] = None
                changed = True
    org = config.get("org_memory")
    if isinstance(org, dict):
        changed |= _drop_not_offered(org, {"backend": "hybrid_prompt_retrieval"})
        changed |= _drop_not_offered(org.get("extended_store"), {"backend": "postgresql"})
    return changed


def drop_values_not_offered(apps, schema_editor):
    Company = apps.get_model("persistence", "Company")
    AuditEntry = apps.get_model("persistence", "AuditEntry")
    for company in Company.objects.all().only("pk", "config", "config_revision"):
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
                    "reason": "values this service does not run were dropped "
                    "(persistence 0009); the defaults are what ran",
                    "before": before,
                    "after": config,
                },
                created_at=timezone.now(),
            )


class Migration(migrations.Migration):
    dependencies = [("persistence", "0008_audit_target_index")]

    operations = [migrations.RunPython(drop_values_not_offered, migrations.RunPython.noop)]
