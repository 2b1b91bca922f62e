from django.apps import AppConfig


class SynthorgConfig(AppConfig):
    name = "synthorg"
    verbose_name = "SynthOrg kernel"
