from __future__ import annotations

from django.db import models

from persistence.models.tenancy import Company


class PersonalityPreset(models.Model):
    """A company's custom agent personality template, looked up by name."""

    company = models.ForeignKey(
        Company, on_delete=models.CASCADE, related_name="personality_presets"
    )
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    traits = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ("name", "id")
        constraints = [
            models.UniqueConstraint(fields=["company", "name"], name="preset_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name
