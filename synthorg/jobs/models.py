"""Durable jobs: the abstract job row, its abstract append-only history, and the turns table.

A family's job model subclasses :class:`DurableJob` (and overrides ``status`` with its own
choices); its history model subclasses :class:`JobStatusChange` and is made append-only in
its migration with :func:`synthorg.db.append_only.AppendOnly` (the one helper that installs
the trigger). Tables keep their family's names.
"""

from __future__ import annotations

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
