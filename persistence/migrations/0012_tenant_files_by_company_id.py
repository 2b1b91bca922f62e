"""Company directories under ``SYNTHORG_TENANT_FILES_DIR`` are named by company id.

They were named by slug, and a slug can be renamed: the freed slug, taken by another
company, then led that company into the first one's files (its wiki export, SKILL.md files,
fine-tune checkpoints). This moves every ``<slug>/`` to ``<id>/`` once
(:func:`synthorg.tenancy.move_slug_directories`; a marker file makes a second run a no-op).
Run it on the host that holds the directory (``manage.py migrate`` does).
"""

from pathlib import Path

from django.conf import settings
from django.db import migrations


def forwards(apps, schema_editor):
    from synthorg.tenancy import move_slug_directories

    companies = apps.get_model("persistence", "Company").objects.values_list("id", "slug")
    for line in move_slug_directories(Path(settings.SYNTHORG_TENANT_FILES_DIR), companies):
        print(f"  tenant files: {line}")


class Migration(migrations.Migration):
    dependencies = [("persistence", "0011_company_config_settings_that_changed_nothing")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True)]
