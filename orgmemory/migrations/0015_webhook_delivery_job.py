"""Webhook deliveries become durable jobs (synthorg.jobs): the ``sending`` status (an attempt
in flight, under its lease), ``updated_at`` / ``completed_at``, ``last_error`` read as the
job's ``reason`` (the column keeps its name), and the append-only status history.

Existing rows: ``updated_at`` is their last attempt (or creation), ``completed_at`` the time a
delivered or failed one ended. A pending delivery still under a worker's lease becomes
``sending``: the sweep reclaims it once that lease has passed, never during the attempt.
"""

import django.db.models.deletion
from django.db import migrations, models

from synthorg.db.append_only import AppendOnly

BACKFILL = """
UPDATE orgmemory_webhookdelivery
   SET updated_at = COALESCE(last_attempt_at, created_at),
       completed_at = CASE
           WHEN status = 'delivered' THEN delivered_at
           WHEN status = 'failed' THEN COALESCE(last_attempt_at, created_at)
       END
"""


class Migration(migrations.Migration):
    dependencies = [
        ("orgmemory", "0014_fact_version_chunks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField("webhookdelivery", "last_error", "reason"),
                migrations.AlterField(
                    model_name="webhookdelivery",
                    name="reason",
                    field=models.TextField(blank=True, db_column="last_error", default=""),
                ),
            ],
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="updated_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="completed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="updated_at",
            field=models.DateTimeField(),
        ),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("sending", "Sending"),
                    ("delivered", "Delivered"),
                    ("failed", "Failed"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
        migrations.RemoveConstraint(
            model_name="webhookdelivery", name="webhook_delivery_status_valid"
        ),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.CheckConstraint(
                condition=models.Q(status__in=["pending", "sending", "delivered", "failed"]),
                name="webhook_delivery_status_valid",
            ),
        ),
        migrations.RunSQL(
            "UPDATE orgmemory_webhookdelivery SET status = 'sending' "
            "WHERE status = 'pending' AND claimed_until > now()",
            reverse_sql="UPDATE orgmemory_webhookdelivery SET status = 'pending' "
            "WHERE status = 'sending'",
        ),
        migrations.CreateModel(
            name="WebhookDeliveryStatusChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("reason", models.CharField(blank=True, default="", max_length=1000)),
                ("attempt", models.PositiveIntegerField(default=0)),
                ("actor", models.CharField(blank=True, default="", max_length=64)),
                ("created_at", models.DateTimeField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("sending", "Sending"),
                            ("delivered", "Delivered"),
                            ("failed", "Failed"),
                        ],
                        max_length=16,
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
                (
                    "delivery",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="status_history",
                        to="orgmemory.webhookdelivery",
                    ),
                ),
            ],
            options={
                "ordering": ("delivery", "id"),
                "indexes": [models.Index(fields=["delivery", "id"], name="webhookhist_delivery")],
            },
        ),
        AppendOnly("orgmemory_webhookdeliverystatuschange"),
    ]
