from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.tenancy import Company


class Project(models.Model):
    """A unit of work agents share. Closing a project purges its project-level memories."""

    class Status(models.TextChoices):
        PLANNING = "planning", "Planning"
        ACTIVE = "active", "Active"
        ON_HOLD = "on_hold", "On hold"
        COMPLETED = "completed", "Completed"
        CANCELLED = "cancelled", "Cancelled"

    CLOSED_STATUSES = frozenset({Status.COMPLETED, Status.CANCELLED})

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    lead = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="led_projects"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("company_id", "name", "id")
        constraints = [
            models.UniqueConstraint(fields=["company", "name"], name="project_unique_name"),
            models.CheckConstraint(
                condition=models.Q(
                    status__in=["planning", "active", "on_hold", "completed", "cancelled"]
                ),
                name="project_status_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "status"], name="project_status"),
            models.Index(fields=["company", "lead"], name="project_lead"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_closed(self) -> bool:
        return self.status in self.CLOSED_STATUSES
