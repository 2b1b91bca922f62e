"""The re-embedding job: which embedder to move a company's vectors to, and how far it got.

A durable job (:mod:`synthorg.jobs`): ``running`` is its queued status (started, batches left,
waiting for a worker), ``working`` its claimed one (a worker holds its lease, renewed every
batch); every transition is a :class:`ReembedStatusChange` row (append-only).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from persistence.models import Company
from synthorg.jobs.models import DurableJob, JobStatusChange


class ReembedStatus(models.TextChoices):
    RUNNING = "running", "Running"  # started; batches left, waiting for a worker
    WORKING = "working", "Working"  # a worker holds its lease and processes batches
    COMPLETED = "completed", "Completed"
    SUPERSEDED = "superseded", "Superseded"  # the company switched embedder again
    FAILED = "failed", "Failed"  # the embedder failed every attempt; an operator re-queues


#: The company's one current job (a DB constraint): search reports its progress.
ACTIVE_STATUSES = ("running", "working", "failed")
#: Not finished: ``completed_at`` is null.
OPEN_STATUSES = ("running", "working")


class ReembedJob(DurableJob):
    Status = ReembedStatus

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
    status = models.CharField(
        max_length=16, choices=ReembedStatus.choices, default=ReembedStatus.RUNNING
    )
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
    #: the last embedder failure ("" after a committed batch)
    reason = models.TextField(db_column="last_error", blank=True, default="")
    method = None  # type: ignore[assignment]  # not LLM work: Django drops the inherited field
    started_via = models.CharField(max_length=16, default="config")
    completed_at = models.DateTimeField(db_column="finished_at", null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.UniqueConstraint(
                fields=["company"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="reembed_one_running_per_company",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ReembedStatus]),
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
                condition=Q(status__in=OPEN_STATUSES, completed_at__isnull=True)
                | (~Q(status__in=OPEN_STATUSES) & Q(completed_at__isnull=False)),
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


class ReembedStatusChange(JobStatusChange):
    """One status transition of a re-embedding job. **Append-only** (a Postgres trigger
    rejects UPDATE/DELETE/TRUNCATE): the job row holds the latest state, this the history."""

    method = None  # type: ignore[assignment]  # Django drops the inherited field
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    # The record outlives its job (nothing deletes one in the product; a test or a manual
    # clean-up may): no constraint, nothing cascades into an append-only table.
    job = models.ForeignKey(
        ReembedJob, on_delete=models.DO_NOTHING, db_constraint=False, related_name="history"
    )
    status = models.CharField(max_length=16, choices=ReembedStatus.choices)

    class Meta:
        ordering = ("job", "id")
        indexes = [models.Index(fields=["job", "id"], name="reembedhist_job")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"
