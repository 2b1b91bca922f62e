"""q2 task: load the company, run one evolver cycle."""

from memory.procedural.evolver.services import skill_evolver_run
from persistence.models import Company


def run_company_evolver(company_id: int) -> str | None:
    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    return skill_evolver_run(company=company, trigger="schedule").status
