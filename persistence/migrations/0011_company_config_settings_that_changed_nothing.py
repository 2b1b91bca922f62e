"""Two settings that changed nothing are refused at load (issue 33).

* ``memory.procedural.evolver.enabled: true`` with ``memory.consolidation.interval`` (or
  ``memory.options.consolidation_interval``) ``never``: the evolver runs on the consolidation
  schedule, so it was never scheduled. ``enabled`` is dropped (the default, ``false``).
* ``memory.retrieval.injection_point`` other than ``system`` with ``strategy: tool_based``:
  that strategy injects no memories. The key is dropped.

Stored configs carrying either are rewritten so they still parse; ``config_revision`` is
bumped so cached parses are replaced, and each rewrite is audited like any config change
(``company.config_changed``, ``via`` ``migration``, the config before and after), as
``0009`` does.
"""

import copy

from django.db import migrations
from django.utils import timezone


def _section(parent, name):
    value = parent.get(name) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _clean(config):
    memory = _section(config, "memory")
    if memory is None:
        return False
    changed = False
    consolidation = _section(memory, "consolidation") or {}
    options = _section(memory, "options") or {}
    never = "never" in (consolidation.get("interval"), options.get("consolidation_interval"))
    evolver = _section(_section(memory, "procedural"), "evolver")
    if never and evolver is not None and evolver.get("enabled") is True:
        del evolver["enabled"]
        changed = True
    retrieval = _section(memory, "retrieval")
    if (
        retrieval is not None
        and retrieval.get("strategy") == "tool_based"
        and retrieval.get("injection_point", "system") != "system"
    ):
        del retrieval["injection_point"]
        changed = True
    return changed


def drop_settings_that_changed_nothing(apps, schema_editor):
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
                    "reason": "settings that changed nothing were dropped (persistence 0011): "
                    "an evolver enabled with consolidation interval 'never', an "
                    "injection_point with strategy 'tool_based'",
                    "before": before,
                    "after": config,
                },
                created_at=timezone.now(),
            )


class Migration(migrations.Migration):
    dependencies = [("persistence", "0010_config_values_that_never_acted")]

    operations = [
        migrations.RunPython(drop_settings_that_changed_nothing, migrations.RunPython.noop)
    ]
