"""q2 tasks of the skill evolver: thin interfaces that load by id and call a service."""

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
