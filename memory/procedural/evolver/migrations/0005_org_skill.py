"""Approved evolver skills stored structured (issue 34 item 4), with their usage counters
(issue 33 item 2).

The data step gives every live or retracted ``procedure`` fact an approval published
(tagged ``skill`` and ``approval:<item id>``) its structure: from the approval item's
proposal as approved and its evidence (what the applier rendered the text from), or, with
the item gone, read once from the text's ``When:`` / ``Do:`` / ``Why:`` / ``Steps:`` lines.
A fact whose current text is not the rendering of that structure (a person published a new
version since) gets no row: its text is the person's. Self-contained: the rendering and the
name rule are copied here as they were at this migration.
"""

import re
import uuid

import django.db.models.deletion
from django.db import migrations, models

_SLUG = re.compile(r"[^a-z0-9]+")


def _name(text):
    slug = _SLUG.sub("-", str(text).lower()).strip("-")[:64].strip("-")
    return slug or "skill"


def _render(s):
    lines = [
        s["discovery"].strip(),
        f"When: {s['condition'].strip()}",
        f"Do: {s['action'].strip()}",
        f"Why: {s['rationale'].strip()}",
        "Steps:",
    ]
    lines += [f"{n}. {step.strip()}" for n, step in enumerate(s["steps"], 1)]
    return "\n".join(lines)


def _from_text(content):
    s = {"discovery": "", "condition": "", "action": "", "rationale": "", "steps": []}
    in_steps = False
    for n, line in enumerate(content.splitlines()):
        if n == 0:
            s["discovery"] = line.strip()
        elif in_steps:
            m = re.match(r"^\d+\. (.*)$", line)
            if m:
                s["steps"].append(m.group(1).strip())
        elif line.startswith("When: "):
            s["condition"] = line[6:].strip()
        elif line.startswith("Do: "):
            s["action"] = line[4:].strip()
        elif line.startswith("Why: "):
            s["rationale"] = line[5:].strip()
        elif line == "Steps:":
            in_steps = True
    return s


def _tag(tags, prefix):
    return next((t[len(prefix) :] for t in tags if t.startswith(prefix)), "")


def structure_existing_skills(apps, schema_editor):
    OrgFact = apps.get_model("orgmemory", "OrgFact")
    OperationLogEntry = apps.get_model("orgmemory", "OperationLogEntry")
    ApprovalItem = apps.get_model("orgmemory", "ApprovalItem")
    OrgSkill = apps.get_model("evolver", "OrgSkill")
    facts = OrgFact.objects.filter(category="procedure", tags__contains=["skill"])
    for fact in facts.iterator():
        item_id = _tag(fact.tags, "approval:")
        if not item_id or OrgSkill.objects.filter(fact_id=fact.pk).exists():
            continue
        try:
            item_pk = uuid.UUID(item_id)
        except ValueError:
            item_pk = None
        item = (
            ApprovalItem.objects.filter(company_id=fact.company_id, pk=item_pk).first()
            if item_pk
            else None
        )
        if item is not None and isinstance(item.metadata.get("proposal"), dict):
            proposal = item.metadata["proposal"]
            s = {
                "discovery": str(proposal.get("discovery", "")),
                "condition": str(proposal.get("condition", "")),
                "action": str(proposal.get("action", "")),
                "rationale": str(proposal.get("rationale", "")),
                "steps": [str(step) for step in proposal.get("execution_steps") or []],
                "name": str(proposal.get("name") or ""),
            }
            evidence = item.evidence if isinstance(item.evidence, dict) else {}
        else:
            s, evidence = _from_text(fact.content), {}
        if not all(s[k].strip() for k in ("discovery", "condition", "action", "rationale")):
            continue
        if not s["steps"] or _render(s) != fact.content:
            continue  # not the evolver's rendering any more: a person's text
        try:
            confidence = float(evidence.get("confidence", _tag(fact.tags, "confidence:") or 0))
        except ValueError:
            confidence = 0.0
        published = (
            OperationLogEntry.objects.filter(fact_id=fact.pk, operation_type="PUBLISH")
            .order_by("-version")
            .first()
        )
        agents = evidence.get("agent_ids") or evidence.get("agents") or []
        OrgSkill.objects.create(
            fact_id=fact.pk,
            company_id=fact.company_id,
            fact_version=published.version if published else fact.version,
            approval_item=item.pk if item is not None else None,
            name=_name(s.get("name") or s["discovery"]),
            discovery=s["discovery"].strip(),
            condition=s["condition"].strip(),
            action=s["action"].strip(),
            rationale=s["rationale"].strip(),
            steps=[step.strip() for step in s["steps"]],
            confidence=min(max(confidence, 0.0), 1.0),
            pattern=str(evidence.get("pattern") or _tag(fact.tags, "pattern:"))[:200],
            report_count=int(evidence.get("report_count") or len(evidence.get("report_ids") or [])),
            agent_count=len(agents) if isinstance(agents, list) else 0,
            created_at=published.timestamp if published else fact.created_at,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evolver", "0004_draft_job_lease"),
        ("orgmemory", "0015_webhook_delivery_job"),
    ]

    operations = [
        migrations.CreateModel(
            name="OrgSkill",
            fields=[
                (
                    "fact",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="evolver_skill",
                        serialize=False,
                        to="orgmemory.orgfact",
                    ),
                ),
                ("fact_version", models.PositiveIntegerField()),
                ("approval_item", models.UUIDField(blank=True, null=True)),
                ("name", models.CharField(max_length=64)),
                ("discovery", models.TextField()),
                ("condition", models.TextField()),
                ("action", models.TextField()),
                ("rationale", models.TextField()),
                ("steps", models.JSONField(default=list)),
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
            ],
            options={
                "ordering": ("created_at", "fact_id"),
                "indexes": [
                    models.Index(fields=["company", "created_at"], name="orgskill_company")
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("confidence__gte", 0.0), ("confidence__lte", 1.0)),
                        name="orgskill_confidence_range",
                    )
                ],
            },
        ),
        migrations.RunPython(structure_existing_skills, migrations.RunPython.noop),
    ]
