from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.tasks import Task
from persistence.models.tenancy import Company


class TaskMetric(models.Model):
    """Outcome figures an agent reports for one task execution (append-only ledger, 0005)."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="task_metrics")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="metrics")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="task_metrics")
    success = models.BooleanField()
    duration_seconds = models.FloatField(default=0)
    turns = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    quality_score = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="taskmetric_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="taskmetric_agent_time"
            ),
            models.Index(
                fields=["company", "task", "-created_at", "-id"], name="taskmetric_task_time"
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.task_id} by {self.agent_id}: {'ok' if self.success else 'failed'}"


class CollaborationMetric(models.Model):
    """How an interaction between two agents went (append-only ledger, migration 0005)."""

    company = models.ForeignKey(
        Company, on_delete=models.PROTECT, related_name="collaboration_metrics"
    )
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="collaboration_metrics")
    peer = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    task = models.ForeignKey(
        Task, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    interaction_type = models.CharField(max_length=100)
    score = models.FloatField()
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(score__gte=0) & models.Q(score__lte=1),
                name="collab_score_range",
            ),
            models.CheckConstraint(
                condition=~models.Q(agent=models.F("peer")), name="collab_distinct_peer"
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="collab_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="collab_agent_time"
            ),
            models.Index(fields=["company", "peer", "-created_at", "-id"], name="collab_peer_time"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}↔{self.peer_id} {self.interaction_type}: {self.score}"
