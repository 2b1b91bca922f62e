"""Schedules of conversation ingestion: one dream schedule per company from ``memory.dream``
(re-synced when a company's config changes, created with the company), whose task runs the
dream as a durable job (``ingestion.dream``, :mod:`memory.ingestion.services.dream_schedule`).
Extraction runs, dream requests and scheduled dreams are durable job kinds
(``ingestion.extraction``, ``ingestion.dream_request``, ``ingestion.dream``): the kernel's
``jobs-<kind>`` schedules dispatch them, taking turns on the company's LLM slots with the
other kinds."""

from __future__ import annotations

from collections.abc import Iterator

from memory.core.schedules import interval_schedule_type
from memory.core.services.edit import on_session_ended
from memory.ingestion.portability import CONTENT_KINDS
from memory.ingestion.scheduling import DREAM_TASK
from memory.ingestion.services.dream_requests import DREAM_REQUEST_JOB
from memory.ingestion.services.dream_schedule import SCHEDULED_DREAM_JOB
from memory.ingestion.services.extraction import EXTRACTION_JOB
from memory.ingestion.services.messages import (
    conversations_purge_project,
    conversations_purge_session,
)
from persistence.content_registry import register_content_kind
from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.services.companies import on_company_created
from persistence.services.projects import on_project_closed
from synthorg.jobs.registry import register_job_kind
from synthorg.schedules import (
    LLM_CLUSTER,
    ScheduleSpec,
    register_schedule_provider,
    schedule_upsert,
)


def dream_schedule_name(company_id: int) -> str:
    return f"ingestion-dream:company-{company_id}"


def company_dream_spec(company) -> ScheduleSpec | None:
    """The company's dream schedule per its config (None when disabled or ``never``)."""

    dream = company_config(company).memory.dream
    schedule_type = interval_schedule_type(dream.interval)
    if not dream.enabled or schedule_type is None:
        return None
    return ScheduleSpec(
        name=dream_schedule_name(company.pk),
        func=DREAM_TASK,
        schedule_type=schedule_type,
        kwargs={"company_id": company.pk},
        cluster=LLM_CLUSTER,
    )


def dream_schedules() -> Iterator[ScheduleSpec]:

    for company in Company.objects.order_by("pk"):
        spec = company_dream_spec(company)
        if spec is not None:
            yield spec


def schedule_dream_for_new_company(company) -> None:
    """Company-creation hook (inside the creating transaction): the dream schedule exists as
    soon as the company does."""

    spec = company_dream_spec(company)
    if spec is not None:
        schedule_upsert(spec)


def _register_content_kinds() -> None:
    """Export and erasure (``persistence.content_registry``) cover ingestion's tables."""

    for kind in CONTENT_KINDS:
        register_content_kind(kind)


def register() -> None:
    on_project_closed(conversations_purge_project)
    on_session_ended(conversations_purge_session)
    on_company_created(schedule_dream_for_new_company)
    _register_content_kinds()
    register_schedule_provider(dream_schedules)
    register_job_kind(EXTRACTION_JOB)
    register_job_kind(DREAM_REQUEST_JOB)
    register_job_kind(SCHEDULED_DREAM_JOB)  # the scheduled dream takes its turn on the slots
