"""Rows of the memory lifecycle: the archive (cold store) and the record of maintenance runs.

Exported by :mod:`memory.core.models` so Django registers them with the memory app.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models

from persistence.models import Agent, Company
from synthorg.enums import MemoryCategory

from .memory import subject_field

ARCHIVE_SEARCH_CONFIG = "english"


def archive_search_vector() -> SearchVector:
    """The expression the archive's GIN index is built on (queries must use the same one)."""
    return SearchVector("content", config=ARCHIVE_SEARCH_CONFIG)


class ArchivedMemory(models.Model):
    """A memory moved out of the hot store, kept whole and restorable by id.

    ``content`` is the original memory's full content; ``mode`` records why it left the hot
    store and how its information was kept there: in consolidation's summary
    (``summary_memory_id``; ``abstractive``/``extractive``), or not at all (``pruned`` by
    procedural pruning, ``retention`` past its retention days, ``expired`` past its
    ``expires_at``, ``capped`` by ``max_memories_per_agent``).
    """

    class Mode(models.TextChoices):
        ABSTRACTIVE = "abstractive", "Abstractive"
        EXTRACTIVE = "extractive", "Extractive"
        PRUNED = "pruned", "Pruned"  # procedural pruning (memory.procedural.pruning)
        RETENTION = "retention", "Past retention"
        EXPIRED = "expired", "Expired"
        CAPPED = "capped", "Over the per-agent cap"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="archived_memories")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="archived_memories")
    original_id = models.UUIDField(unique=True)
    namespace = models.CharField(max_length=100)
    category = models.CharField(max_length=16)
    content = models.TextField()
    context = models.TextField(blank=True, default="")
    source = models.CharField(max_length=200, blank=True, default="")
    confidence = models.FloatField(default=1.0)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    subject = subject_field()  # the original memory's end user ("": none)
    created_at = models.DateTimeField()  # the original memory's
    archived_at = models.DateTimeField()
    mode = models.CharField(max_length=16, choices=Mode.choices)
    summary_memory_id = models.UUIDField(null=True, blank=True)
    maintenance_run = models.ForeignKey(
        "memory.MaintenanceRun", on_delete=models.SET_NULL, null=True, blank=True
    )
    restored_at = models.DateTimeField(null=True, blank=True)
    restored_memory_id = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ("-archived_at", "id")
        verbose_name = "archived memory"
        verbose_name_plural = "archived memories"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=[c.value for c in MemoryCategory]),
                name="archived_memory_category_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    mode__in=[
                        "abstractive",
                        "extractive",
                        "pruned",
                        "retention",
                        "expired",
                        "capped",
                    ]
                ),
                name="archived_memory_mode_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(archived_at__gte=models.F("created_at")),
                name="archived_memory_archived_after_created",
            ),
            models.CheckConstraint(
                condition=~models.Q(content__regex=r"^\s*$"),
                name="archived_memory_content_not_blank",
            ),
            models.CheckConstraint(
                condition=models.Q(restored_at__isnull=True)
                | models.Q(restored_memory_id__isnull=False),
                name="archived_memory_restore_complete",
            ),
        ]
        indexes = [
            models.Index(fields=["agent", "-archived_at"], name="archived_memory_agent_recent"),
            models.Index(
                fields=["company", "subject"],
                condition=~models.Q(subject=""),
                name="archived_memory_subject",
            ),
            GinIndex(archive_search_vector(), name="archived_memory_search"),
        ]

    def __str__(self) -> str:
        return f"{self.category} (archived): {self.content[:60]}"


class MaintenanceRun(models.Model):
    """One maintenance cycle for one agent: retention → consolidation → archival → limit."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Partial (some steps failed)"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped (kill switch)"

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        COMMAND = "command", "Management command"
        MANUAL = "manual", "Manual"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="maintenance_runs")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="maintenance_runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.MANUAL)
    strategy = models.CharField(max_length=16, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    scanned = models.PositiveIntegerField(default=0)
    # Removed from the hot store, per step: archived (restorable by id) unless a retention
    # rule with ``action: delete`` applied. ``archived`` is the run's total of archive rows
    # written; ``deleted`` its total of rows destroyed (hot store and archive).
    retention_archived = models.PositiveIntegerField(default=0)
    retention_deleted = models.PositiveIntegerField(default=0)
    archive_deleted = models.PositiveIntegerField(default=0)
    expired_archived = models.PositiveIntegerField(default=0)
    consolidated = models.PositiveIntegerField(default=0)
    summaries_created = models.PositiveIntegerField(default=0)
    enforced_archived = models.PositiveIntegerField(default=0)
    shared_retracted = models.PositiveIntegerField(default=0)
    archived = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("-started_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(finished_at__isnull=True)
                | models.Q(finished_at__gte=models.F("started_at")),
                name="maintenance_run_finished_after_started",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    status__in=["running", "succeeded", "partial", "failed", "skipped"]
                ),
                name="maintenance_run_status_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-started_at"], name="maintenance_run_company"),
            models.Index(fields=["agent", "-started_at"], name="maintenance_run_agent"),
        ]

    def __str__(self) -> str:
        return f"maintenance of {self.agent_id} at {self.started_at:%Y-%m-%d %H:%M} ({self.status})"
