from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_embedding_storage_main"),
        ("persistence", "0006_company_config_secret_env"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="archivedmemory",
            name="archived_memory_mode_valid",
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="archive_deleted",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="deleted",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="enforced_archived",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="expired_archived",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="retention_archived",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="maintenancerun",
            name="shared_retracted",
            field=models.PositiveIntegerField(default=0),
        ),
        # Runs recorded before archive-first deleted what they removed: their totals move to
        # `deleted`, the per-step figures of the dropped columns into details.
        migrations.RunSQL(
            sql="""
                UPDATE memory_maintenancerun SET
                    deleted = retention_deleted + expired_deleted + enforced_deleted
                        + (consolidated - archived),
                    details = details || jsonb_build_object('deleted_by_step', jsonb_build_object(
                        'retention', retention_deleted,
                        'expired', expired_deleted,
                        'enforced', enforced_deleted,
                        'consolidated_unarchived', consolidated - archived))
                WHERE retention_deleted + expired_deleted + enforced_deleted
                    + (consolidated - archived) > 0
            """,
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.RemoveField(
            model_name="maintenancerun",
            name="enforced_deleted",
        ),
        migrations.RemoveField(
            model_name="maintenancerun",
            name="expired_deleted",
        ),
        migrations.AlterField(
            model_name="archivedmemory",
            name="mode",
            field=models.CharField(
                choices=[
                    ("abstractive", "Abstractive"),
                    ("extractive", "Extractive"),
                    ("pruned", "Pruned"),
                    ("retention", "Past retention"),
                    ("expired", "Expired"),
                    ("capped", "Over the per-agent cap"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="archivedmemory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "mode__in",
                        ["abstractive", "extractive", "pruned", "retention", "expired", "capped"],
                    )
                ),
                name="archived_memory_mode_valid",
            ),
        ),
    ]
