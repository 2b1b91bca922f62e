"""Per-company maintenance schedules: ``memory.consolidation.interval`` → a django-q2 schedule.

``hourly``/``daily``/``weekly`` become a schedule of that type calling
``memory.tasks.run_company_maintenance(company_id)``; ``never`` has none. Re-synced
whenever a company's config changes. The kill switch (``enabled: false``) keeps the
schedule — the run itself is paused — so resuming needs no re-scheduling.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from synthorg.enums import ConsolidationInterval
from synthorg.schedules import ScheduleSpec, sync_schedules

TASK = "memory.tasks.run_company_maintenance"

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


def maintenance_schedules() -> Iterator[ScheduleSpec]:
    from persistence.models import Company
    from persistence.selectors.config import company_config

    for company in Company.objects.order_by("pk"):
        schedule_type = interval_schedule_type(
            company_config(company).memory.consolidation.interval
        )
        if schedule_type is not None:
            yield ScheduleSpec(
                name=schedule_name(company.pk),
                func=TASK,
                schedule_type=schedule_type,
                kwargs={"company_id": company.pk},
            )


def resync_on_config_change(company) -> None:
    """Config-change hook (runs after the change committed): a failure here must not turn
    the committed change into an error; the next ``sync_schedules`` repairs it."""
    try:
        sync_schedules()
    except Exception:
        logger.exception("re-syncing schedules after a config change of %s failed", company)
