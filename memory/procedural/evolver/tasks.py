"""q2 tasks of the skill evolver: thin interfaces that load by id and call a service."""

from memory.procedural.evolver.cycles import evolver_cycle_outcome, evolver_cycle_scheduled
from persistence.models import Company


def run_company_evolver(company_id: int) -> str | None:
    """The company's scheduled cycle (a durable job): its report's status, ``"deferred"``
    when its LLM slots were busy (it waits for its turn), ``None`` when another worker runs
    the company's open cycle."""
    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    return evolver_cycle_outcome(evolver_cycle_scheduled(company=company))
