"""Per-company procedural maintenance schedule (daily): pruning + re-queueing stale captures.

A company whose ``memory.procedural.pruning.strategy`` is ``none`` and whose procedural
learning is disabled has no schedule. Re-synced with every company config change (the memory
app's config hook re-syncs all schedule providers).
"""

from __future__ import annotations

from collections.abc import Iterator

from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.schedules import LLM_CLUSTER, ScheduleSpec

TASK = "memory.procedural.tasks.run_procedural_maintenance"
COMPRESS_TASK = "memory.procedural.tasks.run_experience_compression"


def schedule_name(company_id: int) -> str:
    return f"procedural-maintenance:company-{company_id}"


def procedural_schedules() -> Iterator[ScheduleSpec]:
    from django_q.models import Schedule

    for company in Company.objects.order_by("pk"):
        procedural = company_config(company).memory.procedural
        if procedural.enabled or procedural.pruning.strategy != "none":
            yield ScheduleSpec(
                name=schedule_name(company.pk),
                func=TASK,
                schedule_type=Schedule.DAILY,
                kwargs={"company_id": company.pk},
            )


def compressor_schedule_name(company_id: int) -> str:
    return f"experience-compressor:company-{company_id}"


def compressor_schedules() -> Iterator[ScheduleSpec]:
    """The experience compressor of each company that has it on, at the company's
    ``memory.consolidation.interval`` (none for ``never``: it then runs only when an
    operator asks, ``POST /experiences/compress``), on the LLM cluster."""
    from memory.core.schedules import interval_schedule_type

    for company in Company.objects.order_by("pk"):
        consolidation = company_config(company).memory.consolidation
        schedule_type = interval_schedule_type(consolidation.interval)
        if consolidation.experience_compressor.enabled and schedule_type is not None:
            yield ScheduleSpec(
                name=compressor_schedule_name(company.pk),
                func=COMPRESS_TASK,
                schedule_type=schedule_type,
                kwargs={"company_id": company.pk},
                cluster=LLM_CLUSTER,  # the compressor calls the company's LLM
            )
