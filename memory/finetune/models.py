"""Per-company query adapters: the runs that train them and the checkpoints they produce.

A :class:`FineTuneRun` moves through ``planned → running → promoted | not_promoted |
failed | cancelled``; ``failed`` and ``cancelled`` runs can be resumed (back to
``running``) from the training state saved after their last finished epoch. A run in flight
carries a heartbeat (set when it is queued, claimed and after every epoch): one whose
heartbeat is stale and whose lock no worker holds is resumed by a schedule, a bounded
number of times (``auto_resumes``). A promoted run
writes an :class:`AdapterCheckpoint`; at most one checkpoint per company is active (a
partial unique index), and search applies it to the query vector of that embedder only.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from persistence.models import Company

TERMINAL = ("promoted", "not_promoted", "failed", "cancelled")
RESUMABLE = ("failed", "cancelled")


class FineTuneRun(models.Model):
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
    error = models.TextField(blank=True, default="")
    #: The training state after the last finished epoch (numpy ``.npz``): the resume point.
    state = models.BinaryField(null=True, blank=True, editable=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: When a worker last showed the run alive (queued, claimed, an epoch saved); the
    #: auto-resume schedule revives an in-flight run whose heartbeat is older than
    #: ``memory.fine_tune.auto_resume_after_minutes`` and whose lock is free.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: How many times the schedule revived the run since it was started or resumed by hand.
    auto_resumes = models.PositiveIntegerField(default=0)
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
                condition=Q(status__in=["planned", "running"], finished_at__isnull=True)
                | (Q(status__in=TERMINAL) & Q(finished_at__isnull=False)),
                name="finetune_run_finished_iff_terminal",
            ),
            models.CheckConstraint(
                condition=Q(epochs_done__lte=models.F("epochs_total")) & Q(epochs_total__gte=1),
                name="finetune_run_epochs_within_total",
            ),
            models.CheckConstraint(
                condition=~Q(embedder_id="") & Q(dims__gte=1), name="finetune_run_has_embedder"
            ),
            # A run in flight without a heartbeat could never be told from a crashed one.
            models.CheckConstraint(
                condition=~Q(status__in=["planned", "running"]) | Q(heartbeat_at__isnull=False),
                name="finetune_run_in_flight_has_heartbeat",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.company} fine-tune {self.id} [{self.status}]"

    @property
    def progress(self) -> float:
        if self.status == self.Status.PROMOTED or self.status == self.Status.NOT_PROMOTED:
            return 1.0
        return round(self.epochs_done / self.epochs_total, 4)


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
