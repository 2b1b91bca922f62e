"""Dream requests become durable jobs (synthorg.jobs): a lease, attempts, a due time, a
reason and an append-only status history.

Existing rows: ``created_at``/``updated_at`` from ``requested_at``; a queued request is due
at once (the dispatcher runs it), a ran one is completed.
"""

import django.db.models.deletion
from django.db import migrations, models

from synthorg.db.append_only import AppendOnly

BACKFILL = """
UPDATE ingestion_dreamrequest SET
    created_at = requested_at,
    updated_at = requested_at,
    completed_at = CASE WHEN status = 'ran' THEN requested_at END,
    next_attempt_at = CASE WHEN status = 'queued' THEN requested_at END
"""


class Migration(migrations.Migration):
    dependencies = [
        ("ingestion", "0007_dream_request"),
        ("persistence", "0008_audit_target_index"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="dreamrequest", name="ingestion_dreamreq_queued_has_no_run"
        ),
        migrations.AlterField(
            model_name="dreamrequest",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("ran", "Ran"),
                    ("failed", "Failed"),
                ],
                default="queued",
                max_length=24,
            ),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="reason",
            field=models.CharField(blank=True, default="", max_length=1000),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="created_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="updated_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="dreamrequest",
            name="completed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="dreamrequest",
            name="created_at",
            field=models.DateTimeField(),
        ),
        migrations.AlterField(
            model_name="dreamrequest",
            name="updated_at",
            field=models.DateTimeField(),
        ),
        migrations.AddConstraint(
            model_name="dreamrequest",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("run__isnull", True), ("status__in", ["queued", "running", "failed"])
                    ),
                    ("status", "ran"),
                    _connector="OR",
                ),
                name="ingestion_dreamreq_queued_has_no_run",
            ),
        ),
        migrations.AddIndex(
            model_name="dreamrequest",
            index=models.Index(
                condition=models.Q(("next_attempt_at__isnull", False)),
                fields=["next_attempt_at"],
                name="ingestion_dreamreq_due",
            ),
        ),
        migrations.CreateModel(
            name="DreamRequestStatusChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("method", models.CharField(blank=True, default="", max_length=16)),
                ("reason", models.CharField(blank=True, default="", max_length=1000)),
                ("attempt", models.PositiveIntegerField(default=0)),
                ("actor", models.CharField(blank=True, default="", max_length=64)),
                ("created_at", models.DateTimeField()),
                ("request_id", models.UUIDField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("ran", "Ran"),
                            ("failed", "Failed"),
                        ],
                        max_length=24,
                    ),
                ),
                (
                    "company",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="persistence.company",
                    ),
                ),
            ],
            options={
                "ordering": ("request_id", "id"),
                "indexes": [
                    models.Index(fields=["request_id", "id"], name="ingestion_dreamreqhist")
                ],
            },
        ),
        AppendOnly("ingestion_dreamrequeststatuschange"),
    ]
