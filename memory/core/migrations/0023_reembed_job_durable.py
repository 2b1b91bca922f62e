"""Re-embedding jobs become durable jobs (synthorg.jobs): claimed under a lease (``working``),
retried by the one retry policy (``failed`` once it gives up), and an append-only status
history. ``last_error`` is read as the job's ``reason`` and ``finished_at`` as its
``completed_at`` (the columns keep their names). A running job is due at once.
"""

import django.db.models.deletion
from django.db import migrations, models

from synthorg.db.append_only import AppendOnly

STATUSES = [
    ("running", "Running"),
    ("working", "Working"),
    ("completed", "Completed"),
    ("superseded", "Superseded"),
    ("failed", "Failed"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0022_vector_indexes_private_and_shared"),
        ("persistence", "0007_company_config_relative_paths"),
    ]

    operations = [
        migrations.AddField(
            model_name="reembedjob",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="reembedjob",
            name="next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="reembedjob",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(
            "UPDATE memory_reembedjob SET next_attempt_at = now() WHERE status = 'running'",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="reembedjob",
            name="status",
            field=models.CharField(choices=STATUSES, default="running", max_length=16),
        ),
        migrations.RemoveConstraint(
            model_name="reembedjob", name="reembed_one_running_per_company"
        ),
        migrations.RemoveConstraint(model_name="reembedjob", name="reembed_status_valid"),
        migrations.RemoveConstraint(
            model_name="reembedjob", name="reembed_finished_iff_not_running"
        ),
        # the renames after the old constraints are gone and before the new ones: each
        # constraint is added (either way) while the state names its field
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField("reembedjob", "last_error", "reason"),
                migrations.AlterField(
                    model_name="reembedjob",
                    name="reason",
                    field=models.TextField(blank=True, db_column="last_error", default=""),
                ),
                migrations.RenameField("reembedjob", "finished_at", "completed_at"),
                migrations.AlterField(
                    model_name="reembedjob",
                    name="completed_at",
                    field=models.DateTimeField(blank=True, db_column="finished_at", null=True),
                ),
            ],
        ),
        migrations.RunSQL(
            migrations.RunSQL.noop,
            # back to the old statuses before the old constraints return
            reverse_sql="UPDATE memory_reembedjob SET status = 'running', finished_at = NULL "
            "WHERE status IN ('working', 'failed')",
        ),
        migrations.AddConstraint(
            model_name="reembedjob",
            constraint=models.UniqueConstraint(
                condition=models.Q(status__in=("running", "working", "failed")),
                fields=("company",),
                name="reembed_one_running_per_company",
            ),
        ),
        migrations.AddConstraint(
            model_name="reembedjob",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    status__in=["running", "working", "completed", "superseded", "failed"]
                ),
                name="reembed_status_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="reembedjob",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("completed_at__isnull", True), ("status__in", ("running", "working"))
                )
                | models.Q(
                    models.Q(("status__in", ("running", "working")), _negated=True),
                    ("completed_at__isnull", False),
                ),
                name="reembed_finished_iff_not_running",
            ),
        ),
        migrations.CreateModel(
            name="ReembedStatusChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("reason", models.CharField(blank=True, default="", max_length=1000)),
                ("attempt", models.PositiveIntegerField(default=0)),
                ("actor", models.CharField(blank=True, default="", max_length=64)),
                ("created_at", models.DateTimeField()),
                ("status", models.CharField(choices=STATUSES, max_length=16)),
                (
                    "company",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="persistence.company",
                    ),
                ),
                (
                    "job",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="history",
                        to="memory.reembedjob",
                    ),
                ),
            ],
            options={
                "ordering": ("job", "id"),
                "indexes": [models.Index(fields=["job", "id"], name="reembedhist_job")],
            },
        ),
        AppendOnly("memory_reembedstatuschange"),
    ]
