from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.projects import Project
from persistence.models.tenancy import Company


class TaskStatus(models.TextChoices):
    CREATED = "created", "Created"
    ASSIGNED = "assigned", "Assigned"
    IN_PROGRESS = "in_progress", "In progress"
    IN_REVIEW = "in_review", "In review"
    BLOCKED = "blocked", "Blocked"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Task(models.Model):
    """A unit of work assigned to an agent. Mutable: status moves as the work progresses."""

    Status = TaskStatus

    TERMINAL_STATUSES = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="tasks")
    project = models.ForeignKey(
        Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="tasks"
    )
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    assignee = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="assigned_tasks"
    )
    created_by = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="created_tasks"
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=[s.value for s in TaskStatus]),
                name="task_status_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="task_company_time"),
            models.Index(
                fields=["company", "status", "-created_at", "-id"], name="task_status_time"
            ),
            models.Index(
                fields=["company", "assignee", "-created_at", "-id"], name="task_assignee_time"
            ),
            models.Index(
                fields=["company", "project", "-created_at", "-id"], name="task_project_time"
            ),
        ]

    def __str__(self) -> str:
        return self.title
