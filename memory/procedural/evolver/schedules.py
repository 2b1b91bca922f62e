"""The evolver runs on each company's consolidation schedule (``memory.consolidation.interval``)
when ``memory.procedural.evolver.enabled`` is true (a config enabling it with interval
``never`` is refused at load, so an enabled evolver always has a schedule)."""

from __future__ import annotations

from collections.abc import Iterator

from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.enums import ConsolidationInterval
from synthorg.schedules import LLM_CLUSTER, ScheduleSpec, schedule_once

TASK = "memory.procedural.evolver.tasks.run_company_evolver"


def schedule_name(company_id: int) -> str:
    return f"skill-evolver:company-{company_id}"


def deferred_name(company_id: int) -> str:
    return f"skill-evolver-deferred:company-{company_id}"


def arm_deferred_evolver(company_id: int, *, at) -> None:
    """A scheduled evolver run found the company's LLM slots busy: run it again at ``at``
    (one q2 ``ONCE`` schedule per company, moved forward by every deferral)."""
    schedule_once(
        name=deferred_name(company_id),
        func=TASK,
        kwargs={"company_id": company_id},
        at=at,
        cluster=LLM_CLUSTER,
    )


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
