"""Per-company query adapters: the runs that train them and the checkpoints they produce.

A :class:`FineTuneRun` is a durable job (:mod:`synthorg.jobs`): ``planned`` (queued for a
worker) → ``running`` (claimed under a lease) → ``promoted | not_promoted | failed |
cancelled``; a task that spent its budget puts it back to ``planned`` for its
continuation. ``failed`` and ``cancelled`` runs can be resumed (back to ``planned``) from
the training state saved after their last finished epoch. Every transition is a
:class:`FineTuneRunStatusChange` row (append-only). A promoted run writes an
:class:`AdapterCheckpoint`; at most one checkpoint per company is active (a partial unique
index), and search applies it to the query vector of that embedder only.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from persistence.models import Company
from synthorg.jobs.models import DurableJob, JobStatusChange

TERMINAL = ("promoted", "not_promoted", "failed", "cancelled")
RESUMABLE = ("failed", "cancelled")


class FineTuneRun(DurableJob):
    """``attempts`` counts the claims that ended without an outcome (a worker that died)
    since the run was started or resumed by hand: a continuation gives its attempt back."""

    class Status(models.TextChoices):
        PLANNED = "planned", "Planned"
        RUNNING = "running", "Running"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"
        NOT_PROMOTED = "not_promoted", "Not promoted (gain below the margin)"
        PROMOTED = "promoted", "Promoted"

    class Method(models.TextChoices):
        LINEAR_ADAPTER = "linear_adapter", "Query-side linear adapter"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="fine_tune_runs")
    method = models.CharField(max_length=32, choices=Method.choices)
    #: The base embedder whose vectors the adapter maps (and its width).
    embedder_id = models.CharField(max_length=100)
    dims = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLANNED)
    #: The ``memory.fine_tune`` settings the run was planned with (a resumed run keeps them).
    params = models.JSONField(default=dict)
    epochs_done = models.PositiveIntegerField(default=0)
    epochs_total = models.PositiveIntegerField()
    #: Pair counts per source, before/after evaluation, training seconds, losses, stop reason.
    figures = models.JSONField(default=dict, blank=True)
    #: Why the run failed (the API's ``error``), or why a worker's lease was taken over.
    reason = models.TextField(blank=True, default="", db_column="error")
    #: The training state after the last finished epoch (numpy ``.npz``): the resume point.
    state = models.BinaryField(null=True, blank=True, editable=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    #: When the run ended (the API's ``finished_at``).
    completed_at = models.DateTimeField(null=True, blank=True, db_column="finished_at")
    #: The LLM's synthetic queries, ``[[query, memory id], ...]``, generated once per run (on
    #: the LLM cluster) and reused by every continuation and resume, so a run trains on one
    #: pair set; ``figures["synthetic"]`` records the generation (set when it is done).
    synthetic_pairs = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        db_table = "memory_finetunerun"  # the table it had in memory.core
        ordering = ("-created_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["planned", "running", *TERMINAL]),
                name="finetune_run_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(method__in=["linear_adapter"]), name="finetune_run_method_valid"
            ),
            # One run in flight per company: two would race to activate.
            models.UniqueConstraint(
                fields=["company"],
                condition=Q(status__in=["planned", "running"]),
                name="finetune_one_in_flight_per_company",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["planned", "running"], completed_at__isnull=True)
                | (Q(status__in=TERMINAL) & Q(completed_at__isnull=False)),
                name="finetune_run_finished_iff_terminal",
            ),
            models.CheckConstraint(
                condition=Q(epochs_done__lte=models.F("epochs_total")) & Q(epochs_total__gte=1),
                name="finetune_run_epochs_within_total",
            ),
            models.CheckConstraint(
                condition=~Q(embedder_id="") & Q(dims__gte=1), name="finetune_run_has_embedder"
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(next_attempt_at__isnull=False),
                name="finetune_run_due",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company} fine-tune {self.id} [{self.status}]"

    @property
    def progress(self) -> float:
        if self.status == self.Status.PROMOTED or self.status == self.Status.NOT_PROMOTED:
            return 1.0
        return round(self.epochs_done / self.epochs_total, 4)


class FineTuneRunStatusChange(JobStatusChange):
    """One status transition of a run. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the run row holds the latest state, this the history."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(FineTuneRun, on_delete=models.PROTECT, related_name="history")
    status = models.CharField(max_length=24, choices=FineTuneRun.Status.choices)

    class Meta:
        ordering = ("run", "id")
        indexes = [models.Index(fields=["run", "id"], name="finetunehist_run")]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class AdapterCheckpoint(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(
        Company, on_delete=models.CASCADE, related_name="adapter_checkpoints"
    )
    run = models.OneToOneField(
        FineTuneRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="checkpoint"
    )
    #: The base embedder the matrix maps (search applies it only to this embedder's queries).
    embedder_id = models.CharField(max_length=100)
    dims = models.PositiveIntegerField()
    #: Where the matrix is: ``<directory>/<file_name>`` under the company's server directory
    #: (``directory`` is ``memory.fine_tune.checkpoint_path`` when it was written).
    directory = models.CharField(max_length=500)
    file_name = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64)
    is_active = models.BooleanField(default=False)
    figures = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_adaptercheckpoint"  # the table it had in memory.core
        ordering = ("-created_at", "id")
        constraints = [
            models.UniqueConstraint(
                fields=["company"],
                condition=Q(is_active=True),
                name="adapter_one_active_per_company",
            ),
            models.CheckConstraint(
                condition=~Q(embedder_id="") & Q(dims__gte=1),
                name="adapter_has_embedder",
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="adapter_sha256_hex"
            ),
            models.CheckConstraint(
                condition=~Q(file_name="") & ~Q(file_name__contains="/"),
                name="adapter_file_name_plain",
            ),
            models.CheckConstraint(
                condition=Q(is_active=False) | Q(activated_at__isnull=False),
                name="adapter_active_has_activation_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company} adapter {self.id}{' (active)' if self.is_active else ''}"
