"""Extraction runs become durable jobs (synthorg.jobs, the kind ``ingestion.extraction``): a
lease, attempts, a due time, a reason and an append-only status history. The conversation's
own claim (``claim_run`` / ``claim_expires_at``) and failure count go: the conversation's one
open run carries them.

Existing rows: ``error`` becomes ``reason`` (cut to 1000 characters), ``finished_at``
becomes ``completed_at``, ``updated_at`` is the finish (or creation) time; an LLM or verbatim
run counts one attempt, a deferred record and the turns' runs none. The run a live claim
points at keeps running under that lease; any other ``running`` run (its claim was taken
over) is ``failed``. A conversation with messages due for extraction and no live claim gets
a ``queued`` run due at its ``extraction_due_at``, its attempts the conversation's
``consecutive_failures``. Failed runs from before stay ``failed`` without a due time: they
are history (the conversation's retry was a new run), not given up.
"""

import django.db.models.deletion
from django.db import migrations, models

from synthorg.db.append_only import AppendOnly

STATUSES = [
    ("queued", "Queued"),
    ("running", "Running"),
    ("succeeded", "Succeeded"),
    ("skipped_no_llm", "Skipped (no LLM)"),
    ("failed", "Failed"),
    ("gave_up", "Gave up"),
    ("cancelled", "Cancelled"),
    ("deferred", "Deferred (the company's LLM slots were busy)"),
]

BACKFILL = """
SET CONSTRAINTS ALL IMMEDIATE;

UPDATE ingestion_extractionrun SET
    reason = left(reason, 1000),
    updated_at = coalesce(completed_at, created_at),
    attempts = CASE WHEN status = 'deferred' OR "trigger" IN ('turns', 'llm_failed')
                    THEN 0 ELSE 1 END;

UPDATE ingestion_extractionrun AS r SET claimed_until = c.claim_expires_at
FROM ingestion_conversation AS c
WHERE c.claim_run_id = r.id AND r.status = 'running';

UPDATE ingestion_extractionrun SET
    status = 'failed',
    reason = 'the worker holding the claim did not finish within the lease',
    completed_at = now(),
    updated_at = now()
WHERE status = 'running' AND claimed_until IS NULL;

INSERT INTO ingestion_extractionrun (
    id, company_id, agent_id, conversation_id, status, "trigger", first_seq, last_seq,
    message_count, facts_proposed, added, skipped, superseded, below_confidence,
    ignored_supersedes, model, method, input_tokens, output_tokens, reason, attempts,
    next_attempt_at, claimed_until, created_at, updated_at, completed_at
)
SELECT gen_random_uuid(), c.company_id, c.agent_id, c.id, 'queued',
       CASE WHEN c.consecutive_failures > 0 THEN 'retry' ELSE 'debounce' END,
       c.extracted_through_seq + 1, c.message_count,
       c.message_count - c.extracted_through_seq, 0, 0, 0, 0, 0, 0, '', '', 0, 0, '',
       c.consecutive_failures, c.extraction_due_at, NULL, now(), now(), NULL
FROM ingestion_conversation AS c
WHERE c.extraction_due_at IS NOT NULL
  AND c.extracted_through_seq < c.message_count
  AND NOT EXISTS (
      SELECT 1 FROM ingestion_extractionrun AS r
      WHERE r.conversation_id = c.id AND r.status = 'running'
  );

UPDATE ingestion_conversation AS c SET extraction_due_at = NULL
WHERE EXISTS (
    SELECT 1 FROM ingestion_extractionrun AS r
    WHERE r.conversation_id = c.id AND r.status IN ('queued', 'running')
);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("ingestion", "0009_subjects"),
        ("persistence", "0008_audit_target_index"),
    ]

    operations = [
        migrations.RenameField(model_name="extractionrun", old_name="error", new_name="reason"),
        migrations.RenameField(
            model_name="extractionrun", old_name="finished_at", new_name="completed_at"
        ),
        migrations.AlterField(
            model_name="extractionrun",
            name="status",
            field=models.CharField(choices=STATUSES, default="queued", max_length=24),
        ),
        migrations.AddField(
            model_name="extractionrun",
            name="attempts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="extractionrun",
            name="next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="extractionrun",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="extractionrun",
            name="updated_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="extractionrun",
            name="reason",
            field=models.CharField(blank=True, default="", max_length=1000),
        ),
        migrations.AlterField(
            model_name="extractionrun",
            name="updated_at",
            field=models.DateTimeField(),
        ),
        migrations.RemoveField(model_name="conversation", name="claim_run"),
        migrations.RemoveField(model_name="conversation", name="claim_expires_at"),
        migrations.RemoveField(model_name="conversation", name="consecutive_failures"),
        migrations.AddConstraint(
            model_name="extractionrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("status__in", ["queued", "running"]),
                    models.Q(("next_attempt_at__isnull", False), ("status", "failed")),
                    _connector="OR",
                ),
                fields=("conversation",),
                name="ingestion_run_one_open",
            ),
        ),
        migrations.AddIndex(
            model_name="extractionrun",
            index=models.Index(
                condition=models.Q(("next_attempt_at__isnull", False)),
                fields=["next_attempt_at"],
                name="ingestion_run_due",
            ),
        ),
        migrations.CreateModel(
            name="ExtractionRunStatusChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("method", models.CharField(blank=True, default="", max_length=16)),
                ("reason", models.CharField(blank=True, default="", max_length=1000)),
                ("attempt", models.PositiveIntegerField(default=0)),
                ("actor", models.CharField(blank=True, default="", max_length=64)),
                ("created_at", models.DateTimeField()),
                ("run_id", models.UUIDField()),
                ("status", models.CharField(choices=STATUSES, max_length=24)),
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
                "ordering": ("run_id", "id"),
                "indexes": [models.Index(fields=["run_id", "id"], name="ingestion_runhist")],
            },
        ),
        AppendOnly("ingestion_extractionrunstatuschange"),
    ]
