"""The re-embedding job: which embedder to move a company's vectors to, and how far it got."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from persistence.models import Company


class ReembedJob(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"  # started; batches left (or being processed)
        COMPLETED = "completed", "Completed"
        SUPERSEDED = "superseded", "Superseded"  # the company switched embedder again

    class Phase(models.TextChoices):
        INDEX = "index", "Building the vector index"
        MEMORIES = "memories", "Re-embedding memories"
        FACTS = "facts", "Re-embedding org facts"
        DONE = "done", "Done"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="reembed_jobs")
    #: The embedder most of the company's vectors came from when the job started ("" if none).
    from_embedder_id = models.CharField(max_length=100, blank=True, default="")
    from_dims = models.PositiveIntegerField(null=True, blank=True)
    to_embedder_id = models.CharField(max_length=100)
    to_dims = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.INDEX)
    # Rows whose vector is not the target embedder's when the job started (grown if more
    # turn up), and how many the job has processed.
    memories_total = models.PositiveIntegerField(default=0)
    memories_done = models.PositiveIntegerField(default=0)
    facts_total = models.PositiveIntegerField(default=0)
    facts_done = models.PositiveIntegerField(default=0)
    # Where each pass resumes: rows are processed in id order, each batch committed with
    # the id of its last row.
    memory_cursor = models.UUIDField(null=True, blank=True)
    fact_cursor = models.UUIDField(null=True, blank=True)
    batches = models.PositiveIntegerField(default=0)
    #: Passes over the rows: a last sweep picks up rows that got another embedder's vector
    #: behind the cursor while the job ran (bounded, see services.MAX_PASSES).
    passes = models.PositiveIntegerField(default=1)
    last_error = models.TextField(blank=True, default="")
    started_via = models.CharField(max_length=16, default="config")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.UniqueConstraint(
                fields=["company"],
                condition=Q(status="running"),
                name="reembed_one_running_per_company",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["running", "completed", "superseded"]),
                name="reembed_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(phase__in=["index", "memories", "facts", "done"]),
                name="reembed_phase_valid",
            ),
            models.CheckConstraint(
                condition=Q(memories_done__lte=F("memories_total"))
                & Q(facts_done__lte=F("facts_total")),
                name="reembed_done_within_total",
            ),
            models.CheckConstraint(
                condition=Q(status="running", finished_at__isnull=True)
                | (~Q(status="running") & Q(finished_at__isnull=False)),
                name="reembed_finished_iff_not_running",
            ),
            models.CheckConstraint(
                condition=~Q(status="completed") | Q(phase="done"),
                name="reembed_completed_is_done",
            ),
            models.CheckConstraint(
                condition=~Q(to_embedder_id="") & Q(to_dims__gte=1),
                name="reembed_has_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company} → {self.to_embedder_id} ({self.to_dims}) [{self.status}]"

    @property
    def total(self) -> int:
        return self.memories_total + self.facts_total

    @property
    def done(self) -> int:
        return self.memories_done + self.facts_done

    @property
    def share_done(self) -> float:
        """Processed share of the rows to re-embed (1.0 when there were none)."""
        return 1.0 if self.total == 0 else round(self.done / self.total, 4)
