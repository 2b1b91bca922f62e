from django.apps import AppConfig


class ProceduralConfig(AppConfig):
    name = "memory.procedural"
    label = "procedural"
    verbose_name = "Procedural learning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory.procedural.schedules import procedural_schedules
        from synthorg.schedules import register_schedule_provider

        register_schedule_provider(procedural_schedules)
