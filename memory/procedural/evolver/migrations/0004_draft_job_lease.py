"""Draft failures become durable jobs (synthorg.jobs): the lease of the worker retrying
one, and when it was completed (backfilled from ``updated_at`` for finished drafts)."""

from django.db import migrations, models

BACKFILL_COMPLETED = """
UPDATE evolver_draftfailure SET completed_at = updated_at
WHERE status IN ('drafted', 'gave_up', 'superseded') AND completed_at IS NULL
"""


class Migration(migrations.Migration):
    dependencies = [
        ("evolver", "0003_draft_failures"),
    ]

    operations = [
        migrations.AddField(
            model_name="draftfailure",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="draftfailure",
            name="completed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL_COMPLETED, reverse_sql=migrations.RunSQL.noop),
    ]
