"""django-q2 tasks for re-embedding jobs: load by id, call the service."""

from __future__ import annotations

from memory.reembed.models import ReembedJob
from memory.reembed.services import enqueue_reembed_job, reembed_job_run

#: Seconds one task works before queueing its continuation (under the q2 timeout).
TASK_TIME_BUDGET_S = 240.0


def run_reembed_job(job_id: int) -> str | None:
    """Work on the job for up to ``TASK_TIME_BUDGET_S``; queue the rest. Returns its status."""
    job = ReembedJob.objects.filter(pk=job_id).first()
    if job is None or job.status != ReembedJob.Status.RUNNING:
        return None if job is None else job.status
    progress = reembed_job_run(job=job, time_budget=TASK_TIME_BUDGET_S)
    if not progress.finished and not progress.error:
        enqueue_reembed_job(job_id)  # budget spent: continue in a fresh task
    # After an embedder error the job waits for the resume schedule (every 5 minutes).
    job.refresh_from_db()
    return job.status


def resume_reembed_jobs() -> int:
    """Schedule: queue a task for every running job (a crashed worker's, one paused by an
    embedder error); a task whose job another worker is running returns at once (the job's
    lock). Returns how many were queued."""
    ids = list(
        ReembedJob.objects.filter(status=ReembedJob.Status.RUNNING)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for job_id in ids:
        enqueue_reembed_job(job_id)
    return len(ids)
