"""The evolver runs on each company's consolidation schedule (``memory.consolidation.interval``)
when ``memory.procedural.evolver.enabled`` is true (a config enabling it with interval
``never`` is refused at load, so an enabled evolver always has a schedule). Its task runs
the cycle as a durable job (:mod:`memory.procedural.evolver.cycles`): with the company's LLM
slots busy the cycle waits for its turn."""

from __future__ import annotations

from collections.abc import Iterator

from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.enums import ConsolidationInterval
from synthorg.schedules import LLM_CLUSTER, ScheduleSpec

TASK = "memory.procedural.evolver.tasks.run_company_evolver"


def schedule_name(company_id: int) -> str:
    return f"skill-evolver:company-{company_id}"


def evolver_schedules() -> Iterator[ScheduleSpec]:
    from django_q.models import Schedule

    types = {
        ConsolidationInterval.HOURLY: Schedule.HOURLY,
        ConsolidationInterval.DAILY: Schedule.DAILY,
        ConsolidationInterval.WEEKLY: Schedule.WEEKLY,
    }
    for company in Company.objects.order_by("pk"):
        config = company_config(company).memory
        if config.procedural.evolver.enabled and config.consolidation.interval in types:
            yield ScheduleSpec(
                name=schedule_name(company.pk),
                func=TASK,
                schedule_type=types[config.consolidation.interval],
                kwargs={"company_id": company.pk},
                cluster=LLM_CLUSTER,
            )
