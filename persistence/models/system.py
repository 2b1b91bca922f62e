from django.db import models


class ClusterHeartbeat(models.Model):
    """Written by a scheduled django-q2 task: proof that the worker cluster executes work."""

    cluster = models.CharField(max_length=100, unique=True)
    beat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.cluster} @ {self.beat_at:%Y-%m-%d %H:%M:%S}"
