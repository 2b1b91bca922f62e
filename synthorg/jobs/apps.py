from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "synthorg.jobs"
    label = "jobs"
    verbose_name = "Durable jobs"
    default_auto_field = "django.db.models.BigAutoField"
