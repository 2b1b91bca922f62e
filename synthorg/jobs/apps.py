from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "synthorg.jobs"
    label = "jobs"
    verbose_name = "Durable jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from synthorg.jobs.registry import register_wake_schedules

        register_wake_schedules()
