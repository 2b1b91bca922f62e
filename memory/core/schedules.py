"""Per-company maintenance schedules: ``memory.consolidation.interval`` → a django-q2 schedule.

``hourly``/``daily``/``weekly`` become a schedule of that type calling
``memory.core.tasks.run_company_maintenance(company_id)``; ``never`` has none. Created with the
company (in the same transaction) and re-synced whenever a company's config changes. The
kill switch (``enabled: false``) keeps the schedule — the run itself is paused — so
resuming needs no re-scheduling.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.enums import ConsolidationInterval
from synthorg.schedules import ScheduleSpec, schedule_upsert, sync_schedules

TASK = "memory.core.tasks.run_company_maintenance"

logger = logging.getLogger(__name__)


def schedule_name(company_id: int) -> str:
    return f"memory-maintenance:company-{company_id}"


def interval_schedule_type(interval: ConsolidationInterval) -> str | None:
    """The django-q2 schedule type of a config ``interval`` (``None`` for ``never``)."""
    from django_q.models import Schedule

    return {
        ConsolidationInterval.HOURLY: Schedule.HOURLY,
        ConsolidationInterval.DAILY: Schedule.DAILY,
        ConsolidationInterval.WEEKLY: Schedule.WEEKLY,
    }.get(interval)


def company_maintenance_spec(company) -> ScheduleSpec | None:
    """The company's maintenance schedule per its config (None for ``never``)."""

    schedule_type = interval_schedule_type(company_config(company).memory.consolidation.interval)
    if schedule_type is None:
        return None
    return ScheduleSpec(
        name=schedule_name(company.pk),
        func=TASK,
        schedule_type=schedule_type,
        kwargs={"company_id": company.pk},
    )


def maintenance_schedules() -> Iterator[ScheduleSpec]:

    for company in Company.objects.order_by("pk"):
        spec = company_maintenance_spec(company)
        if spec is not None:
            yield spec


def schedule_new_company(company) -> None:
    """Company-creation hook (inside the creating transaction): its schedule exists as soon
    as the company does, not only after the next ``sync_schedules``."""
    spec = company_maintenance_spec(company)
    if spec is not None:
        schedule_upsert(spec)


def resync_on_config_change(company) -> None:
    """Config-change hook (runs after the change committed): a failure here must not turn
    the committed change into an error; the next ``sync_schedules`` repairs it."""
    try:
        sync_schedules()
    except Exception:
        logger.exception("re-syncing schedules after a config change of %s failed", company)
