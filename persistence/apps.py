from django.apps import AppConfig


class PersistenceConfig(AppConfig):
    name = "persistence"
    verbose_name = "Companies, agents and operational data"

    def ready(self) -> None:
        from django_q.models import Schedule

        from persistence.api import schema  # noqa: F401 - registers the OpenAPI auth schemes
        from persistence.api.authentication import principal_for_raw_key
        from synthorg.mcp.auth import register_key_resolver
        from synthorg.schedules import ScheduleSpec, register_schedule

        register_key_resolver(principal_for_raw_key)

        register_schedule(
            ScheduleSpec(
                name="cluster-heartbeat",
                func="persistence.tasks.record_cluster_heartbeat",
                schedule_type=Schedule.MINUTES,
                minutes=1,
            )
        )
