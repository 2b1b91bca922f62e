"""django-q2 tasks of the job kernel for a kind registered without tasks of its own: its
every-minute dispatch, a company's batch and one job's own run, by the kind's name."""

from __future__ import annotations

from dataclasses import asdict

from synthorg.jobs.dispatch import job_run, jobs_dispatch, jobs_run_company, jobs_wake
from synthorg.jobs.registry import job_kind


def jobs_dispatch_kind(kind_name: str, now=None) -> dict:
    """The kind's schedule (every minute): reclaim, then one task per company with due jobs."""
    dispatch = jobs_dispatch(job_kind(kind_name), now=now)
    return {"reclaimed": dispatch.reclaimed, "companies": list(dispatch.companies)}


def jobs_company(kind_name: str, company_id: int, now=None) -> dict:
    """One company's due jobs of the kind, under one of its LLM slots (its turn when busy)."""
    return asdict(jobs_run_company(job_kind(kind_name), company_id=company_id, now=now))


def job_run_task(kind_name: str, pk: str) -> str | None:
    """One job's own task (:func:`~synthorg.jobs.dispatch.job_enqueue`): its status after
    the run, or ``None`` when it was not claimable (it ran, another worker has it)."""
    job = job_run(job_kind(kind_name), pk)
    return job.status if job is not None else None


def jobs_wake_task(now=None) -> dict:
    """The kernel's wake (every 30 s): per kind, the jobs reclaimed and the companies handed
    a task (:func:`~synthorg.jobs.dispatch.jobs_wake`)."""
    return {
        name: {"reclaimed": dispatch.reclaimed, "companies": list(dispatch.companies)}
        for name, dispatch in jobs_wake(now=now).items()
    }
