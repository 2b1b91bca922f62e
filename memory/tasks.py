"""django-q2 tasks: thin interfaces that call services."""

from memory.services.embeddings import BACKFILL_BATCH, memory_embeddings_backfill
from memory.services.maintenance import run_company_maintenance as _maintain_company
from memory.services.maintenance import run_maintenance as _maintain_agent
from persistence.models import Agent, Company


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
