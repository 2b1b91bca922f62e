from __future__ import annotations

from django.conf import settings
from django.db import models

from persistence.models.tenancy import Company


class Setting(models.Model):
    """A company setting addressed by ``namespace`` + ``key`` (e.g. budget / monthly_limit)."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="settings")
    namespace = models.CharField(max_length=100)
    key = models.CharField(max_length=100)
    value = models.JSONField()
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ("namespace", "key", "id")
        constraints = [
            models.UniqueConstraint(
                fields=["company", "namespace", "key"], name="setting_unique_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}.{self.key}"
