from django.apps import AppConfig


class PersistenceConfig(AppConfig):
    name = "persistence"
    verbose_name = "Companies, agents and operational data"

    def ready(self) -> None:
        from django_q.models import Schedule
        from django_q.signals import post_spawn

        from persistence.api import schema  # noqa: F401 - registers the OpenAPI auth schemes
        from persistence.api.authentication import principal_for_raw_key
        from persistence.content_kinds import CONTENT_KINDS
        from persistence.content_registry import register_content_kind
        from persistence.health import cluster_health, llm_cluster_health
        from persistence.services.system import cluster_heartbeat_on_spawn
        from synthorg.health import register_health_check
        from synthorg.mcp.auth import register_key_resolver
        from synthorg.schedules import LLM_CLUSTER, ScheduleSpec, register_schedule

        for kind in CONTENT_KINDS:  # export/erasure of what agents said and held
            register_content_kind(kind)
        register_key_resolver(principal_for_raw_key)
        register_health_check("q2_cluster", cluster_health)
        post_spawn.connect(cluster_heartbeat_on_spawn, dispatch_uid="synthorg-heartbeat-spawn")
        register_health_check("q2_llm_cluster", llm_cluster_health)

        register_schedule(
            ScheduleSpec(
                name="cluster-heartbeat",
                func="persistence.tasks.record_cluster_heartbeat",
                schedule_type=Schedule.MINUTES,
                minutes=1,
            )
        )
        register_schedule(  # the LLM cluster's own proof of life (see synthorg.schedules)
            ScheduleSpec(
                name="llm-cluster-heartbeat",
                func="persistence.tasks.record_cluster_heartbeat",
                schedule_type=Schedule.MINUTES,
                minutes=1,
                kwargs={"cluster": LLM_CLUSTER},
                cluster=LLM_CLUSTER,
            )
        )
