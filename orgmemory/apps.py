from django.apps import AppConfig


class OrgMemoryConfig(AppConfig):
    name = "orgmemory"
    verbose_name = "Organizational memory"
