"""Fine-tune runs carry a heartbeat (auto-resume of a run whose worker died). Runs already in
flight get their last update as their heartbeat before the constraint is added."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0018_memory_chunks"),
        ("persistence", "0008_audit_target_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="finetunerun",
            name="auto_resumes",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="finetunerun",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(
            "UPDATE memory_finetunerun SET heartbeat_at = updated_at "
            "WHERE status IN ('planned', 'running') AND heartbeat_at IS NULL",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddConstraint(
            model_name="finetunerun",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("status__in", ["planned", "running"]), _negated=True),
                    ("heartbeat_at__isnull", False),
                    _connector="OR",
                ),
                name="finetune_run_in_flight_has_heartbeat",
            ),
        ),
    ]
