"""django-q2 tasks: thin interfaces that call services."""

from memory.services.embeddings import BACKFILL_BATCH, memory_embeddings_backfill


def backfill_pending_embeddings(limit: int = BACKFILL_BATCH) -> int:
    return memory_embeddings_backfill(limit=limit)


def run_company_maintenance(company_id: int) -> int:
    """Scheduled memory maintenance of one company; returns the number of agents maintained."""
    from memory.services.maintenance import run_company_maintenance as maintain
    from persistence.models import Company

    company = Company.objects.filter(pk=company_id).first()
    if company is None:  # deleted since the schedule was synced
        return 0
    return len(maintain(company=company, trigger="schedule"))


def run_agent_maintenance(agent_id: int) -> str | None:
    """One agent's maintenance cycle; returns the run's status."""
    from memory.services.maintenance import run_maintenance
    from persistence.models import Agent

    agent = Agent.objects.select_related("company").filter(pk=agent_id).first()
    if agent is None:
        return None
    return run_maintenance(agent=agent, trigger="schedule").status
