"""Path fields the server opens are names relative to the company's own directory.

Configs saved before that rule could name any absolute directory (e.g. the SKILL.md
directory); such a value is dropped here (SKILL.md files are then not written until a
company admin names a relative directory) so every stored config still parses.
"""

from django.db import migrations

SERVER_PATHS = (
    ("procedural", "skill_md_directory"),
    ("fine_tune", "checkpoint_path"),
    ("fine_tune", "training_data_dir"),
)


def drop_absolute_paths(apps, schema_editor):
    Company = apps.get_model("persistence", "Company")
    for company in Company.objects.all().only("pk", "config", "config_revision"):
        memory = (company.config or {}).get("memory") or {}
        changed = False
        for section_name, field in SERVER_PATHS:
            section = memory.get(section_name) or {}
            value = section.get(field)
            if isinstance(value, str) and value.startswith("/"):
                section[field] = None
                changed = True
        if changed:
            if memory.get("fine_tune", {}).get("enabled") and not memory["fine_tune"].get(
                "checkpoint_path"
            ):
                memory["fine_tune"]["enabled"] = False  # needs a checkpoint_path to stay valid
            company.config_revision += 1
            company.save(update_fields=["config", "config_revision"])


class Migration(migrations.Migration):
    dependencies = [("persistence", "0006_company_config_secret_env")]

    operations = [migrations.RunPython(drop_absolute_paths, migrations.RunPython.noop)]
