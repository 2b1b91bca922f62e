from django.apps import AppConfig


class ProceduralConfig(AppConfig):
    name = "memory.procedural"
    label = "procedural"
    verbose_name = "Procedural learning"
    default_auto_field = "django.db.models.BigAutoField"
