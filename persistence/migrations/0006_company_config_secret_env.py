"""Stored company configs may name only SYNTHORG_SECRET_* variables as embedder keys.

Configs saved before the allow-list could name any environment variable; such a name is
dropped here (the embedder then calls without a key) so every stored config still parses.
"""

import re

from django.db import migrations

ALLOWED = re.compile(r"^SYNTHORG_SECRET_[A-Z0-9_]+$")


def drop_disallowed_secret_env(apps, schema_editor):
    Company = apps.get_model("persistence", "Company")
    for company in Company.objects.all().only("pk", "config", "config_revision"):
        embedder = (company.config or {}).get("memory", {}).get("embedder") or {}
        name = embedder.get("api_key_env")
        if name is not None and not ALLOWED.match(str(name)):
            embedder["api_key_env"] = None
            company.config_revision += 1
            company.save(update_fields=["config", "config_revision"])


class Migration(migrations.Migration):
    dependencies = [("persistence", "0005_append_only_activity_ledgers")]

    operations = [migrations.RunPython(drop_disallowed_secret_env, migrations.RunPython.noop)]
