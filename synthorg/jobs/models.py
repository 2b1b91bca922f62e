"""Durable jobs: the abstract job row, its abstract append-only history, and the turns table.

A family's job model subclasses :class:`DurableJob` (and overrides ``status`` with its own
choices); its history model subclasses :class:`JobStatusChange` and is made append-only in
its migration with :func:`synthorg.db.append_only.AppendOnly` (the one helper that installs
the trigger). Tables keep their family's names.
"""

from __future__ import annotations

import uuid

from django.db import models


class DurableJob(models.Model):
    """A unit of (LLM) work that survives its worker: claimed under a lease, retried with
    back-off, deferred without charge while the company's LLM slots are busy.

    ``claimed_until`` is the lease of the worker running it (``status`` is the kind's
    running status): once it has passed, the worker is taken for dead and the job is
    reclaimed (:func:`synthorg.jobs.services.job_reclaim_expired`). A running row without a
    lease (written before leases existed) is leased from ``updated_at``.
    """

    status = models.CharField(max_length=24)
    attempts = models.PositiveIntegerField(default=0)
    # When the job is due again (a retry, a deferral); null when nothing is pending.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=1000, blank=True, default="")
    # What did the work: llm | rule (empty until it is done).
    method = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class JobStatusChange(models.Model):
    """One status transition of a job. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the job row holds the latest state, this the history."""

    id = models.BigAutoField(primary_key=True)
    status = models.CharField(max_length=24)
    method = models.CharField(max_length=16, blank=True, default="")
    reason = models.CharField(max_length=1000, blank=True, default="")
    attempt = models.PositiveIntegerField(default=0)
    # Who caused it: "" for the job's own run and its schedule, "user:<id>" for an operator.
    actor = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        abstract = True


class JobTurn(models.Model):
    """A job kind that found its company's LLM slots busy and waits for its turn: whoever
    holds a slot of that company serves it before letting go (the dispatcher's fairness)."""

    company_id = models.BigIntegerField()
    kind = models.CharField(max_length=64)
    waiting_since = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company_id", "kind"], name="jobturn_one_per_kind")
        ]

    def __str__(self) -> str:
        return f"{self.kind} of company {self.company_id} waiting since {self.waiting_since}"


class ScheduledRun(DurableJob):
    """A company's scheduled run as a durable job (:mod:`synthorg.jobs.scheduled`): ``queued``
    until one of the company's LLM slots is free — with every slot taken it waits for its
    turn, served by the slot's holder — then ``running`` and ``done``. ``failed``: the run
    raised (the next scheduled run starts afresh). At most one open run per company: a
    subclass adds its ``company`` and :func:`scheduled_constraints`."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    trigger = models.CharField(max_length=16)  # schedule
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)

    class Meta:
        abstract = True


class ScheduledRunStatusChange(JobStatusChange):
    """One status transition of a :class:`ScheduledRun` (append-only): a subclass adds its
    ``company`` and the foreign key to its run."""

    status = models.CharField(max_length=16, choices=ScheduledRun.Status.choices)

    class Meta:
        abstract = True


def scheduled_due_index(name: str) -> models.Index:
    """A :class:`ScheduledRun` table's index of its due runs (what the dispatcher reads)."""
    return models.Index(
        fields=["next_attempt_at"], condition=models.Q(next_attempt_at__isnull=False), name=name
    )


def scheduled_constraints(name: str) -> list[models.BaseConstraint]:
    """A :class:`ScheduledRun` table's constraints: a valid status, and one open run
    (``queued`` or ``running``) per company (``<name>_one_open_per_company``)."""
    return [
        models.CheckConstraint(
            condition=models.Q(status__in=ScheduledRun.Status.values),
            name=f"{name}_status_valid",
        ),
        models.UniqueConstraint(
            fields=["company"],
            condition=models.Q(status__in=["queued", "running"]),
            name=f"{name}_one_open_per_company",
        ),
    ]
