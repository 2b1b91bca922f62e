"""q2 tasks of the skill evolver: thin interfaces that load by id and call a service."""

from memory.procedural.evolver.draft_retry import evolver_drafts_retry_due
from memory.procedural.evolver.services import skill_evolver_run
from persistence.models import Company


def run_company_evolver(company_id: int) -> str | None:
    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    return skill_evolver_run(company=company, trigger="schedule").status


def retry_due_drafts() -> dict:
    """Every minute: reclaim orphaned draft retries, retry the failed drafts that are due."""
    summary = evolver_drafts_retry_due()
    return {"reclaimed": summary.reclaimed, "retried": summary.retried, "waiting": summary.waiting}
