from django.apps import AppConfig


class SynthorgConfig(AppConfig):
    name = "synthorg"
    verbose_name = "SynthOrg kernel"

    def ready(self) -> None:
        from synthorg.api import serializers

        serializers.install()
