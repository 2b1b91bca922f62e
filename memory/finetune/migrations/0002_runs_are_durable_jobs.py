"""Fine-tune runs become durable jobs (synthorg.jobs): claimed under a lease, with an
append-only status history.

* ``error`` and ``finished_at`` are the job's ``reason`` and ``completed_at`` in the state;
  the columns keep their names (no SQL for them).
* The heartbeat and the revival count give way to the lease (``claimed_until``), the due
  time (``next_attempt_at``) and ``attempts``: a run ``planned`` before this migration is
  due at its last heartbeat (the schedule queues it again if its task was lost), a
  ``running`` one is leased from its ``updated_at`` (reclaimed once that lease has passed),
  and the revivals it had count as its attempts.
* ``finetune_finetunerunstatuschange`` is append-only (a trigger rejects UPDATE/DELETE).
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F, Q

from synthorg.db.append_only import AppendOnly

TERMINAL = ("promoted", "not_promoted", "failed", "cancelled")
STATUSES = [
    ("planned", "Planned"),
    ("running", "Running"),
    ("cancelled", "Cancelled"),
    ("failed", "Failed"),
    ("not_promoted", "Not promoted (gain below the margin)"),
    ("promoted", "Promoted"),
]


def finished_iff_terminal(field: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(status__in=["planned", "running"], **{f"{field}__isnull": True})
        | (Q(status__in=TERMINAL) & Q(**{f"{field}__isnull": False})),
        name="finetune_run_finished_iff_terminal",
    )


def leases_from_heartbeats(apps, schema_editor):
    FineTuneRun = apps.get_model("finetune", "FineTuneRun")
    FineTuneRun.objects.filter(status="planned").update(next_attempt_at=F("heartbeat_at"))
    FineTuneRun.objects.update(attempts=F("auto_resumes"))


class Migration(migrations.Migration):
    dependencies = [
        ("finetune", "0001_initial"),
        ("persistence", "0009_company_config_values_not_offered"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveConstraint(
                    model_name="finetunerun", name="finetune_run_finished_iff_terminal"
                ),
                migrations.RenameField(
                    model_name="finetunerun", old_name="error", new_name="reason"
                ),
                migrations.AlterField(
                    model_name="finetunerun",
                    name="reason",
                    field=models.TextField(blank=True, db_column="error", default=""),
                ),
                migrations.RenameField(
                    model_name="finetunerun", old_name="finished_at", new_name="completed_at"
                ),
                migrations.AlterField(
                    model_name="finetunerun",
                    name="completed_at",
                    field=models.DateTimeField(blank=True, db_column="finished_at", null=True),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun", constraint=finished_iff_terminal("completed_at")
                ),
            ],
        ),
        migrations.AddField(
            model_name="finetunerun",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="finetunerun",
            name="next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="finetunerun",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(leases_from_heartbeats, migrations.RunPython.noop),
        # The backfill's deferred foreign-key checks run now: the table is altered next.
        migrations.RunSQL("SET CONSTRAINTS ALL IMMEDIATE", migrations.RunSQL.noop),
        migrations.RemoveConstraint(
            model_name="finetunerun", name="finetune_run_in_flight_has_heartbeat"
        ),
        migrations.RemoveField(model_name="finetunerun", name="heartbeat_at"),
        migrations.RemoveField(model_name="finetunerun", name="auto_resumes"),
        migrations.AddIndex(
            model_name="finetunerun",
            index=models.Index(
                condition=Q(next_attempt_at__isnull=False),
                fields=["next_attempt_at"],
                name="finetune_run_due",
            ),
        ),
        migrations.CreateModel(
            name="FineTuneRunStatusChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("method", models.CharField(blank=True, default="", max_length=16)),
                ("reason", models.CharField(blank=True, default="", max_length=1000)),
                ("attempt", models.PositiveIntegerField(default=0)),
                ("actor", models.CharField(blank=True, default="", max_length=64)),
                ("created_at", models.DateTimeField()),
                ("status", models.CharField(choices=STATUSES, max_length=24)),
                (
                    "company",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="persistence.company",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="history",
                        to="finetune.finetunerun",
                    ),
                ),
            ],
            options={
                "ordering": ("run", "id"),
                "indexes": [models.Index(fields=["run", "id"], name="finetunehist_run")],
            },
        ),
        AppendOnly("finetune_finetunerunstatuschange"),
    ]
