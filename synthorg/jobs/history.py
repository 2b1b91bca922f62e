"""Appending to a kind's status history: the ``history`` callable of a :class:`JobKind`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from synthorg.jobs.models import JobStatusChange

REASON_MAX = 1000


def history_writer(model: type[JobStatusChange], job_field: str) -> Callable[..., Any]:
    """``history(job, *, now, reason=None, actor="")`` for a history ``model`` (a
    :class:`~synthorg.jobs.models.JobStatusChange` with a ``company`` and the foreign key
    ``job_field`` to the job): appends the job's current status, attempt count and reason
    (``reason`` overrides the row's), and its method when the model keeps one."""

    def record(job, *, now: datetime, reason: str | None = None, actor: str = ""):
        fields = {
            "company_id": job.company_id,
            f"{job_field}_id": job.pk,
            "status": job.status,
            "reason": (job.reason if reason is None else reason)[:REASON_MAX],
            "attempt": job.attempts,
            "actor": actor,
            "created_at": now,
        }
        if any(field.name == "method" for field in model._meta.concrete_fields):
            fields["method"] = job.method
        return model._default_manager.create(**fields)

    return record
