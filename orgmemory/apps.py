from django.apps import AppConfig


class OrgMemoryConfig(AppConfig):
    name = "orgmemory"
    verbose_name = "Organizational memory"

    def ready(self) -> None:
        from django_q.models import Schedule

        from orgmemory.services.policies import (
            core_policies_config_applier,
            core_policies_for_editing,
        )
        from orgmemory.services.webhooks import WEBHOOK_JOB
        from orgmemory.tools import register_org_tools
        from persistence.services.companies import (
            register_config_applier,
            register_config_presenter,
        )
        from synthorg.jobs.registry import register_job_kind
        from synthorg.schedules import ScheduleSpec, register_schedule

        register_job_kind(WEBHOOK_JOB)

        register_org_tools()
        # A config save's core_policies list becomes versioned facts; editors show the live list.
        register_config_applier(core_policies_config_applier)
        register_config_presenter(core_policies_for_editing)

        register_schedule(
            ScheduleSpec(
                name="orgmemory-embedding-backfill",
                func="orgmemory.tasks.backfill_fact_embeddings",
                schedule_type=Schedule.MINUTES,
                minutes=10,
            )
        )
        register_schedule(
            ScheduleSpec(
                name="orgmemory-approval-expiry",
                func="orgmemory.tasks.expire_approval_items",
                schedule_type=Schedule.MINUTES,
                minutes=1,
            )
        )
