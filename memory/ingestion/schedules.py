"""Schedules of conversation ingestion: the extraction sweep, and one dream schedule per
company from ``memory.dream.interval`` (re-synced when a company's config changes)."""

from __future__ import annotations

from collections.abc import Iterator

from synthorg.schedules import ScheduleSpec

SWEEP_TASK = "memory.ingestion.tasks.extract_due_conversations"
DREAM_TASK = "memory.ingestion.tasks.dream_company"


def dream_schedule_name(company_id: int) -> str:
    return f"ingestion-dream:company-{company_id}"


def dream_schedules() -> Iterator[ScheduleSpec]:
    from memory.schedules import interval_schedule_type
    from persistence.models import Company
    from persistence.selectors.config import company_config

    for company in Company.objects.order_by("pk"):
        dream = company_config(company).memory.dream
        schedule_type = interval_schedule_type(dream.interval)
        if dream.enabled and schedule_type is not None:
            yield ScheduleSpec(
                name=dream_schedule_name(company.pk),
                func=DREAM_TASK,
                schedule_type=schedule_type,
                kwargs={"company_id": company.pk},
            )


def register() -> None:
    from django_q.models import Schedule

    from memory.ingestion.services.messages import (
        conversations_purge_project,
        conversations_purge_session,
    )
    from memory.services.lifecycle import on_session_ended
    from persistence.services.projects import on_project_closed
    from synthorg.schedules import register_schedule, register_schedule_provider

    on_project_closed(conversations_purge_project)
    on_session_ended(conversations_purge_session)
    register_schedule(
        ScheduleSpec(
            name="ingestion-extraction-sweep",
            func=SWEEP_TASK,
            schedule_type=Schedule.MINUTES,
            minutes=1,
        )
    )
    register_schedule_provider(dream_schedules)
