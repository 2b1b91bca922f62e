"""One org skill store (issue 34 item 4): every approved org-wide skill in one table,
``procedural.OrgSkill``, with the ``source`` that proposed it.

The data step moves what the two stores held, keeping every value:

* each evolver skill (``evolver.OrgSkill``, keyed by its ``procedure`` fact) becomes a row of
  source ``evolver`` whose id is the fact's id, with its advice taken from its approval
  item's proposal when the item still exists (``{}`` otherwise);
* each org-pool entry (a shared PROCEDURAL memory of scope ``org`` with a lesson, superseded
  ones included: they are the pool's history) becomes a row of source ``lesson-pool`` whose
  id is the memory's id, its structure copied from the lesson and its counters from the
  memory. The lesson rows stay: they are the memory's tiers.

Reversed, the evolver rows go back to ``evolver.OrgSkill`` (recreated empty by reversing
``evolver.0006``) with every field they had; the lesson-pool rows are dropped, their data
being still on the lessons and memories they were copied from. Nothing is audited: no
company's data changes meaning, only where it is kept (the audited data migrations,
``persistence.0011`` / ``0013``, rewrite a company's config). Self-contained: it names no
model of the current code.
"""

import django.db.models.deletion
import uuid
from django.db import migrations, models

EVOLVER_FIELDS = (
    "fact_version",
    "approval_item",
    "name",
    "discovery",
    "condition",
    "action",
    "rationale",
    "steps",
    "confidence",
    "pattern",
    "report_count",
    "agent_count",
    "application_count",
    "last_applied_at",
    "created_at",
)


def _clamp(value):
    try:
        return min(max(float(value), 0.0), 1.0)
    except (TypeError, ValueError):
        return 0.0


def unify_org_skills(apps, schema_editor):
    OldSkill = apps.get_model("evolver", "OrgSkill")
    OrgSkill = apps.get_model("procedural", "OrgSkill")
    ApprovalItem = apps.get_model("orgmemory", "ApprovalItem")
    ProceduralLesson = apps.get_model("procedural", "ProceduralLesson")
    rows = []
    for old in OldSkill.objects.order_by("created_at", "fact_id").iterator():
        advice = {}
        if old.approval_item is not None:
            metadata = (
                ApprovalItem.objects.filter(pk=old.approval_item)
                .values_list("metadata", flat=True)
                .first()
            )
            proposal = (metadata or {}).get("proposal") or {}
            if isinstance(proposal.get("advice"), dict):
                advice = proposal["advice"]
        rows.append(
            OrgSkill(
                id=old.fact_id,
                company_id=old.company_id,
                source="evolver",
                fact_id=old.fact_id,
                advice=advice,
                **{field: getattr(old, field) for field in EVOLVER_FIELDS},
            )
        )
    pool = (
        ProceduralLesson.objects.filter(memory__scope="org", memory__is_shared=True)
        .select_related("memory")
        .order_by("created_at", "memory_id")
    )
    for lesson in pool.iterator():
        memory = lesson.memory
        rows.append(
            OrgSkill(
                id=lesson.memory_id,
                company_id=lesson.company_id,
                source="lesson-pool",
                memory_id=lesson.memory_id,
                approval_item=lesson.org_approval_item,
                name=lesson.skill_name,
                discovery=lesson.discovery,
                condition=lesson.condition,
                action=lesson.action,
                rationale=lesson.rationale,
                steps=list(lesson.execution_steps or []),
                advice=lesson.advice if isinstance(lesson.advice, dict) else {},
                confidence=_clamp(memory.confidence),
                report_count=1 if lesson.report_id else 0,
                agent_count=1,
                application_count=memory.application_count,
                last_applied_at=memory.last_applied_at,
                created_at=lesson.created_at,
            )
        )
    OrgSkill.objects.bulk_create(rows, batch_size=500)


def split_org_skills(apps, schema_editor):
    OldSkill = apps.get_model("evolver", "OrgSkill")
    OrgSkill = apps.get_model("procedural", "OrgSkill")
    rows = OrgSkill.objects.filter(source="evolver", fact__isnull=False).order_by("created_at")
    OldSkill.objects.bulk_create(
        [
            OldSkill(
                fact_id=row.fact_id,
                company_id=row.company_id,
                **{field: getattr(row, field) for field in EVOLVER_FIELDS},
            )
            for row in rows.iterator()
        ],
        batch_size=500,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("evolver", "0005_org_skill"),
        ("memory", "0026_memory_task_scope"),
        ("orgmemory", "0016_webhook_events"),
        ("persistence", "0013_config_knobs_whose_setting_is_off"),
        ("procedural", "0009_compressed_experience_memory"),
    ]

    operations = [
        migrations.CreateModel(
            name="OrgSkill",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "source",
                    models.CharField(
                        choices=[
                            ("evolver", "Skill evolver"),
                            ("lesson-pool", "Lesson pool"),
                            ("operator", "Operator"),
                        ],
                        max_length=16,
                    ),
                ),
                ("fact_version", models.PositiveIntegerField(blank=True, null=True)),
                ("approval_item", models.UUIDField(blank=True, null=True)),
                ("name", models.CharField(max_length=64)),
                ("discovery", models.TextField()),
                ("condition", models.TextField()),
                ("action", models.TextField()),
                ("rationale", models.TextField()),
                ("steps", models.JSONField(default=list)),
                ("advice", models.JSONField(blank=True, default=dict)),
                ("confidence", models.FloatField()),
                ("pattern", models.CharField(blank=True, default="", max_length=200)),
                ("report_count", models.PositiveIntegerField(default=0)),
                ("agent_count", models.PositiveIntegerField(default=0)),
                ("application_count", models.PositiveIntegerField(default=0)),
                ("last_applied_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField()),
                (
                    "company",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="persistence.company",
                    ),
                ),
                (
                    "fact",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="skill",
                        to="orgmemory.orgfact",
                    ),
                ),
                (
                    "memory",
                    models.OneToOneField(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="memory.memory",
                    ),
                ),
            ],
            options={
                "ordering": ("created_at", "id"),
                "indexes": [
                    models.Index(fields=["company", "created_at"], name="org_skill_company")
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("source__in", ["evolver", "lesson-pool", "operator"])),
                        name="org_skill_source_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("fact__isnull", True),
                                ("memory__isnull", False),
                                ("source", "lesson-pool"),
                            ),
                            models.Q(
                                models.Q(("source", "lesson-pool"), _negated=True),
                                ("fact__isnull", False),
                                ("memory__isnull", True),
                            ),
                            _connector="OR",
                        ),
                        name="org_skill_entry_matches_source",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("confidence__gte", 0.0), ("confidence__lte", 1.0)),
                        name="org_skill_confidence_range",
                    ),
                ],
            },
        ),
        migrations.RunPython(unify_org_skills, split_org_skills),
    ]
