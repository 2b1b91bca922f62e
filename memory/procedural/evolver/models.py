"""Evolver records.

* :class:`EvolverReport` — one per evolver run (a cycle, or a run of the draft retry
  schedule), what the seed's eval loop consumes.
* :class:`EvolverCycle` — one scheduled cycle as a durable job: it waits for its turn on the
  company's LLM slots (``queued``), runs (``running``) and ends ``done`` with its report.
* :class:`EvolverCycleStatusChange` — every status transition of a cycle. **Append-only**.
* :class:`DraftFailure` — one pattern whose LLM draft failed in a run: the retry schedule
  drafts it again with back-off (mutable; at most one open record per company and pattern).
* :class:`DraftStatusChange` — every status transition of a draft failure. **Append-only**
  (a Postgres trigger rejects UPDATE/DELETE/TRUNCATE).

An approved evolver skill is stored in the org skill store
(:class:`memory.procedural.models.OrgSkill`, ``source`` ``evolver``).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from orgmemory.models import ApprovalItem
from persistence.models import Company
from synthorg.jobs.models import (
    DurableJob,
    JobStatusChange,
    ScheduledRun,
    ScheduledRunStatusChange,
    scheduled_constraints,
    scheduled_due_index,
)


class EvolverReport(models.Model):
    class Status(models.TextChoices):
        COMPLETED = "completed", "Completed"
        DISABLED = "skipped_disabled", "Skipped: evolver disabled"
        NO_LLM = "skipped_no_llm", "Skipped: no LLM configured"
        ORG_FULL = "skipped_org_full", "Skipped: max_org_entries reached"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="evolver_reports")
    trigger = models.CharField(max_length=16)  # schedule | command | retry
    status = models.CharField(max_length=24, choices=Status.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    reports_scanned = models.PositiveIntegerField(default=0)
    patterns_found = models.PositiveIntegerField(default=0)
    patterns_eligible = models.PositiveIntegerField(default=0)
    skipped_already_proposed = models.PositiveIntegerField(default=0)
    # eligible patterns left to the draft retry schedule (their earlier draft failed)
    skipped_awaiting_retry = models.PositiveIntegerField(default=0)
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


class DraftStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its next attempt (next_attempt_at)
    RETRYING = "retrying", "Retrying"  # a retry run is drafting it now
    DRAFTED = "drafted", "Drafted"  # an item was emitted (by the LLM, or by rule: no LLM)
    GAVE_UP = "gave_up", "Gave up"  # the LLM failed every attempt; a rule item was emitted
    SUPERSEDED = "superseded", "Superseded"  # no longer eligible, or proposed meanwhile


OPEN_DRAFT_STATUSES = (DraftStatus.PENDING, DraftStatus.RETRYING)
DRAFT_METHOD_CHOICES = [("llm", "LLM"), ("rule", "Rule")]


class DraftFailure(DurableJob):
    """A pattern whose LLM draft failed, and what became of it (mutable).

    ``report`` is the run that failed it first; ``reason`` the latest failure, as the user
    needs it ("… HTTP 404: The model `x` does not exist", "invalid JSON from proposer: …").
    ``item`` is the ApprovalItem finally emitted for it (``method`` says how it was drafted).
    A durable job (:mod:`synthorg.jobs`): ``pending`` is its queued status, ``retrying`` its
    running one.
    """

    Status = DraftStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    pattern = models.TextField()
    report = models.ForeignKey(
        EvolverReport, on_delete=models.PROTECT, related_name="draft_failures"
    )
    status = models.CharField(max_length=16, choices=DraftStatus.choices)
    reason = models.CharField(max_length=1000)
    method = models.CharField(max_length=16, blank=True, default="", choices=DRAFT_METHOD_CHOICES)
    item = models.ForeignKey(
        ApprovalItem, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ("created_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in DraftStatus]),
                name="draft_failure_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(method__in=["", "llm", "rule"]), name="draft_failure_method_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(next_attempt_at__isnull=False),
                name="draft_failure_pending_is_due",
            ),
            models.CheckConstraint(
                condition=~Q(status="drafted") | (Q(item__isnull=False) & ~Q(method="")),
                name="draft_failure_drafted_has_item",
            ),
            models.UniqueConstraint(
                fields=["company", "pattern"],
                condition=Q(status__in=["pending", "retrying"]),
                name="draft_failure_one_open_per_pattern",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="draftfailure_retry_due",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pattern}: {self.status}"


class DraftStatusChange(JobStatusChange):
    """One status transition of a draft failure. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the draft failure holds the latest state, this the history."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    draft = models.ForeignKey(DraftFailure, on_delete=models.PROTECT, related_name="history")
    status = models.CharField(max_length=16, choices=DraftStatus.choices)

    class Meta:
        ordering = ("draft", "id")
        indexes = [models.Index(fields=["draft", "id"], name="drafthist_draft")]

    def __str__(self) -> str:
        return f"{self.draft_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class EvolverCycle(ScheduledRun):
    """A scheduled cycle of one company (a durable job, :mod:`synthorg.jobs.scheduled`):
    ``queued`` until one of the company's LLM slots is free — with every slot taken it waits
    for its turn, served by the slot's holder — then ``running`` and ``done`` with its
    :class:`EvolverReport`. ``failed``: the run raised outside the cycle's own error
    handling (the next scheduled cycle starts afresh). At most one open cycle per company."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    report = models.OneToOneField(
        EvolverReport, on_delete=models.SET_NULL, null=True, blank=True, related_name="cycle"
    )

    class Meta:
        ordering = ("created_at", "id")
        constraints = scheduled_constraints("evolver_cycle")
        indexes = [scheduled_due_index("evolvercycle_due")]

    def __str__(self) -> str:
        return f"evolver cycle {self.company_id} [{self.status}]"


class EvolverCycleStatusChange(ScheduledRunStatusChange):
    """One status transition of a cycle. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the cycle holds the latest state, this the history."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    cycle = models.ForeignKey(EvolverCycle, on_delete=models.PROTECT, related_name="history")

    class Meta:
        ordering = ("cycle", "id")
        indexes = [models.Index(fields=["cycle", "id"], name="evolvercyclehist_cycle")]

    def __str__(self) -> str:
        return f"{self.cycle_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"
