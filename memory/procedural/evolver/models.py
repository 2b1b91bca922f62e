"""One record per evolver cycle (``EvolverReport``), what the seed's eval loop consumes."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from persistence.models import Company


class EvolverReport(models.Model):
    class Status(models.TextChoices):
        COMPLETED = "completed", "Completed"
        DISABLED = "skipped_disabled", "Skipped: evolver disabled"
        NO_LLM = "skipped_no_llm", "Skipped: no LLM configured"
        ORG_FULL = "skipped_org_full", "Skipped: max_org_entries reached"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="evolver_reports")
    trigger = models.CharField(max_length=16)  # schedule | command
    status = models.CharField(max_length=24, choices=Status.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    reports_scanned = models.PositiveIntegerField(default=0)
    patterns_found = models.PositiveIntegerField(default=0)
    patterns_eligible = models.PositiveIntegerField(default=0)
    skipped_already_proposed = models.PositiveIntegerField(default=0)
    drafts_failed = models.PositiveIntegerField(default=0)
    proposals_emitted = models.PositiveIntegerField(default=0)
    conflicts_escalated = models.PositiveIntegerField(default=0)
    verdicts = models.JSONField(default=dict, blank=True)  # {"FULL": n, "PARTIAL": n, ...}
    items = models.JSONField(default=list, blank=True)  # ids of the ApprovalItems emitted
    # llm: drafts written by the LLM; rule: no LLM, drafted from the member lessons' text.
    method = models.CharField(
        max_length=16, blank=True, default="", choices=[("llm", "LLM"), ("rule", "Rule")]
    )
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ("-started_at",)
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "completed",
                        "skipped_disabled",
                        "skipped_no_llm",
                        "skipped_org_full",
                        "failed",
                    ]
                ),
                name="evolver_report_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__gte=models.F("started_at")),
                name="evolver_report_times",
            ),
        ]
        indexes = [models.Index(fields=["company", "-started_at"], name="evolver_company_time")]

    def __str__(self) -> str:
        return f"evolver {self.company_id} {self.started_at:%Y-%m-%d %H:%M} {self.status}"
