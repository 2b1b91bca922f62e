"""Fine-tune runs and adapter checkpoints, taken over from ``memory`` (``memory.core``).

State only: the tables were created by ``memory`` (0016, 0019, 0021) and keep their names
(``memory_finetunerun``, ``memory_adaptercheckpoint``), rows and constraints; this app's
state enters with the same fields, so no SQL runs. The content types of the two models move
with them (their permissions follow).
"""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("finetunerun", "adaptercheckpoint")


def move_content_types(apps, schema_editor, *, source="memory", target="finetune"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="finetune", target="memory")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("memory", "0024_fine_tune_leaves_the_core"),
        ("persistence", "0009_company_config_values_not_offered"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="FineTuneRun",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "method",
                            models.CharField(
                                choices=[("linear_adapter", "Query-side linear adapter")],
                                max_length=32,
                            ),
                        ),
                        ("embedder_id", models.CharField(max_length=100)),
                        ("dims", models.PositiveIntegerField()),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("planned", "Planned"),
                                    ("running", "Running"),
                                    ("cancelled", "Cancelled"),
                                    ("failed", "Failed"),
                                    ("not_promoted", "Not promoted (gain below the margin)"),
                                    ("promoted", "Promoted"),
                                ],
                                default="planned",
                                max_length=16,
                            ),
                        ),
                        ("params", models.JSONField(default=dict)),
                        ("epochs_done", models.PositiveIntegerField(default=0)),
                        ("epochs_total", models.PositiveIntegerField()),
                        ("figures", models.JSONField(blank=True, default=dict)),
                        ("error", models.TextField(blank=True, default="")),
                        ("state", models.BinaryField(blank=True, null=True)),
                        ("created_at", models.DateTimeField()),
                        ("updated_at", models.DateTimeField()),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("heartbeat_at", models.DateTimeField(blank=True, null=True)),
                        ("auto_resumes", models.PositiveIntegerField(default=0)),
                        (
                            "synthetic_pairs",
                            models.JSONField(blank=True, default=list, editable=False),
                        ),
                        (
                            "company",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="fine_tune_runs",
                                to="persistence.company",
                            ),
                        ),
                        (
                            "requested_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memory_finetunerun",
                        "ordering": ("-created_at", "id"),
                    },
                ),
                migrations.CreateModel(
                    name="AdapterCheckpoint",
                    fields=[
                        (
                            "id",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("embedder_id", models.CharField(max_length=100)),
                        ("dims", models.PositiveIntegerField()),
                        ("directory", models.CharField(max_length=500)),
                        ("file_name", models.CharField(max_length=100)),
                        ("sha256", models.CharField(max_length=64)),
                        ("is_active", models.BooleanField(default=False)),
                        ("figures", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField()),
                        ("activated_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "company",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="adapter_checkpoints",
                                to="persistence.company",
                            ),
                        ),
                        (
                            "run",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="checkpoint",
                                to="finetune.finetunerun",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "memory_adaptercheckpoint",
                        "ordering": ("-created_at", "id"),
                    },
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            (
                                "status__in",
                                [
                                    "planned",
                                    "running",
                                    "promoted",
                                    "not_promoted",
                                    "failed",
                                    "cancelled",
                                ],
                            )
                        ),
                        name="finetune_run_status_valid",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("method__in", ["linear_adapter"])),
                        name="finetune_run_method_valid",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("status__in", ["planned", "running"])),
                        fields=("company",),
                        name="finetune_one_in_flight_per_company",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("finished_at__isnull", True),
                                ("status__in", ["planned", "running"]),
                            ),
                            models.Q(
                                ("status__in", ("promoted", "not_promoted", "failed", "cancelled")),
                                ("finished_at__isnull", False),
                            ),
                            _connector="OR",
                        ),
                        name="finetune_run_finished_iff_terminal",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("epochs_done__lte", models.F("epochs_total")), ("epochs_total__gte", 1)
                        ),
                        name="finetune_run_epochs_within_total",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="finetunerun",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("embedder_id", ""), _negated=True), ("dims__gte", 1)
                        ),
                        name="finetune_run_has_embedder",
                    ),
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
                migrations.AddConstraint(
                    model_name="adaptercheckpoint",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("is_active", True)),
                        fields=("company",),
                        name="adapter_one_active_per_company",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="adaptercheckpoint",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("embedder_id", ""), _negated=True), ("dims__gte", 1)
                        ),
                        name="adapter_has_embedder",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="adaptercheckpoint",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("sha256__regex", "^[0-9a-f]{64}$")),
                        name="adapter_sha256_hex",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="adaptercheckpoint",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("file_name", ""), _negated=True),
                            models.Q(("file_name__contains", "/"), _negated=True),
                        ),
                        name="adapter_file_name_plain",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="adaptercheckpoint",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("is_active", False), ("activated_at__isnull", False), _connector="OR"
                        ),
                        name="adapter_active_has_activation_time",
                    ),
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
