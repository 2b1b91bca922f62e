# Built concurrently: the audit table takes a row with every governed write, and a plain
# CREATE INDEX would block those writes for as long as the build takes.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("persistence", "0007_company_config_relative_paths"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="auditentry",
            index=models.Index(
                fields=["company", "target_type", "target_id", "created_at"], name="audit_target"
            ),
        ),
    ]
