"""django-q2 tasks of the core: thin interfaces that load by id and call one service."""

from memory.core.models import RequestLogEntry
from memory.core.models.reembed import ReembedJob
from memory.core.services.embeddings import BACKFILL_BATCH, memory_embeddings_backfill
from memory.core.services.maintenance import run_company_maintenance as _maintain_company
from memory.core.services.maintenance import run_maintenance as _maintain_agent
from memory.core.services.reembed import (
    TASK_TIME_BUDGET_S,
    enqueue_reembed_job,
    reembed_job_run,
)
from memory.core.services.request_log import request_log_trim
from persistence.models import Agent, Company
from persistence.selectors.config import company_config


def backfill_pending_embeddings(limit: int = BACKFILL_BATCH) -> int:
    return memory_embeddings_backfill(limit=limit)


def run_company_maintenance(company_id: int) -> int:
    """Scheduled memory maintenance of one company; returns the number of agents maintained."""
    company = Company.objects.filter(pk=company_id).first()
    if company is None:  # deleted since the schedule was synced
        return 0
    return len(_maintain_company(company=company, trigger="schedule"))


def run_agent_maintenance(agent_id: int) -> str | None:
    """One agent's maintenance cycle; returns the run's status."""
    agent = Agent.objects.select_related("company").filter(pk=agent_id).first()
    if agent is None:
        return None
    return _maintain_agent(agent=agent, trigger="schedule").status


def run_reembed_job(job_id: int) -> str | None:
    """Work on the job for up to ``TASK_TIME_BUDGET_S``; queue the rest. Returns its status."""
    job = ReembedJob.objects.filter(pk=job_id).first()
    if job is None or job.status != ReembedJob.Status.RUNNING:
        return None if job is None else job.status
    progress = reembed_job_run(job=job, time_budget=TASK_TIME_BUDGET_S)
    if not progress.finished and not progress.error:
        enqueue_reembed_job(job_id)  # budget spent: continue in a fresh task
    # After an embedder error the job is due again after the retry policy's back-off.
    job.refresh_from_db()
    return job.status


def trim_request_logs() -> dict[str, int]:
    """Every company with log entries trimmed to its ``memory.request_log`` cap and age."""
    expired = over_cap = 0
    company_ids = RequestLogEntry.objects.order_by().values_list("company_id", flat=True).distinct()
    for company in Company.objects.filter(pk__in=company_ids):
        result = request_log_trim(
            company=company, config=company_config(company).memory.request_log
        )
        expired += result.expired
        over_cap += result.over_cap
    return {"expired": expired, "over_cap": over_cap}
