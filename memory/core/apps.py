from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory.core"
    label = "memory"
    verbose_name = "Agent memory"

    def ready(self) -> None:
        from django_q.models import Schedule

        from memory.core.services.archive import memories_archive_task
        from memory.core.services.edit import memory_purge_project
        from persistence.services.projects import on_project_closed
        from persistence.services.tasks import on_task_ended
        from synthorg.schedules import ScheduleSpec, register_schedule

        on_project_closed(memory_purge_project)
        on_task_ended(memories_archive_task)
        _register_content_kinds()
        _register_maintenance_schedules()
        _register_reembedding()
        register_schedule(
            ScheduleSpec(
                name="memory-embedding-backfill",
                func="memory.core.tasks.backfill_pending_embeddings",
                schedule_type=Schedule.MINUTES,
                minutes=5,
            )
        )
        register_schedule(
            ScheduleSpec(
                name="memory-request-log-retention",
                func="memory.core.tasks.trim_request_logs",
                schedule_type=Schedule.MINUTES,
                minutes=15,
            )
        )


def _register_reembedding() -> None:
    """A changed embedder starts a re-embedding job; the kernel's ``jobs-memory.reembed``
    schedule (every minute) reclaims and hands out jobs whose worker died or whose retry is
    due."""
    from memory.core.services.reembed import REEMBED_JOB, reembed_on_config_change
    from persistence.services.companies import on_company_config_change, on_company_created
    from synthorg.jobs.registry import register_job_kind

    register_job_kind(REEMBED_JOB)

    on_company_config_change(reembed_on_config_change)
    # A company created with another embedder gets its index built by a (row-less) job.
    on_company_created(reembed_on_config_change)


def _register_maintenance_schedules() -> None:
    from memory.core.schedules import (
        maintenance_schedules,
        resync_on_config_change,
        schedule_new_company,
    )
    from persistence.services.companies import on_company_config_change, on_company_created
    from synthorg.schedules import register_schedule_provider

    register_schedule_provider(maintenance_schedules)
    on_company_config_change(resync_on_config_change)
    on_company_created(schedule_new_company)


def _register_content_kinds() -> None:
    """Export, import and erasure cover memories, shared knowledge, the archive and the
    request log."""
    from memory.core.services.portability import CONTENT_KINDS
    from memory.core.services.request_log import REQUEST_LOG
    from persistence.content_registry import register_content_kind

    for kind in (*CONTENT_KINDS, REQUEST_LOG):
        register_content_kind(kind)
