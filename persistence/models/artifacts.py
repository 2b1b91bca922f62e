from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.tasks import Task
from persistence.models.tenancy import Company


class Artifact(models.Model):
    """Something a task produced: a document, code, a report, a dataset reference."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="artifacts")
    task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts"
    )
    created_by = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts"
    )
    artifact_type = models.CharField(max_length=50)
    name = models.CharField(max_length=300)
    uri = models.CharField(max_length=1000, blank=True)
    content = models.TextField(blank=True)
    content_type = models.CharField(max_length=100, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="artifact_company_time"),
            models.Index(
                fields=["company", "task", "-created_at", "-id"], name="artifact_task_time"
            ),
            models.Index(
                fields=["company", "created_by", "-created_at", "-id"], name="artifact_creator_time"
            ),
            models.Index(
                fields=["company", "artifact_type", "-created_at", "-id"], name="artifact_type_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.artifact_type}: {self.name}"
