"""q2 tasks of the skill evolver: thin interfaces that load by id and call a service."""

from memory.procedural.evolver.draft_retry import (
    evolver_drafts_retry_company,
    evolver_drafts_retry_dispatch,
)
from memory.procedural.evolver.services import skill_evolver_run_scheduled
from persistence.models import Company


def run_company_evolver(company_id: int) -> str | None:
    """The company's scheduled cycle; ``"deferred"`` when its LLM slots were busy (re-armed
    a minute later)."""
    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    report = skill_evolver_run_scheduled(company=company)
    return "deferred" if report is None else report.status


def retry_due_drafts(now=None) -> dict:
    """Every minute: reclaim orphaned draft retries, give each company with due drafts its
    own :func:`retry_company_drafts` task."""
    dispatch = evolver_drafts_retry_dispatch(now=now)
    return {"reclaimed": dispatch.reclaimed, "companies": list(dispatch.companies)}


def retry_company_drafts(company_id: int, now=None) -> dict:
    """One company's due drafts, under one of its LLM slots (skipped when all are busy)."""
    summary = evolver_drafts_retry_company(company_id=company_id, now=now)
    return {"retried": summary.retried, "waiting": summary.waiting, "busy": summary.busy}
