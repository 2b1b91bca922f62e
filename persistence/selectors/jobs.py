"""The failed jobs of every registered kind (:mod:`synthorg.jobs`) for one company."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from persistence.models import Company
from synthorg.jobs.registry import JobKind, job_kinds


@dataclass(frozen=True)
class FailedJob:
    kind: JobKind
    job: Any

    @property
    def subject(self) -> str:
        return self.kind.describe(self.job) if self.kind.describe is not None else ""

    @property
    def detail_url(self) -> str:
        return self.kind.detail_url(self.job) if self.kind.detail_url is not None else ""

    @property
    def last_attempt(self) -> datetime:
        return self.job.updated_at


def failed_jobs(*, company: Company, limit: int = 50) -> list[FailedJob]:
    """The company's jobs in a failed status of their kind (at most ``limit`` per kind, one
    query each), the latest first."""
    rows = [
        FailedJob(kind, job)
        for kind in sorted(job_kinds(), key=lambda kind: kind.title)
        if kind.failed_statuses
        for job in kind.objects()
        .filter(company_id=company.pk, status__in=kind.failed_statuses)
        .order_by("-updated_at")[:limit]
    ]
    return sorted(rows, key=lambda row: row.last_attempt, reverse=True)
