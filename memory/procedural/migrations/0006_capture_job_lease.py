"""Captures become durable jobs (synthorg.jobs): the lease of the worker running one.

A capture ``running`` before this migration has no lease: it is leased from its
``updated_at`` (synthorg.jobs.services.job_reclaim_expired), so nothing to backfill.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("procedural", "0005_compression_run_deferred"),
    ]

    operations = [
        migrations.AddField(
            model_name="executioncapture",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
