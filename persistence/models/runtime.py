"""What agents are doing right now: runtime state, heartbeats, lifecycle events,
checkpoints and parked contexts."""

from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.tasks import Task
from persistence.models.tenancy import Company


class AgentRuntimeState(models.Model):
    """The one current state of an agent (upserted by the agent itself)."""

    class Status(models.TextChoices):
        IDLE = "idle", "Idle"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        OFFLINE = "offline", "Offline"

    ACTIVE_STATUSES = frozenset({Status.ACTIVE})

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="agent_states")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="runtime_state")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    current_task = models.ForeignKey(
        Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    execution_id = models.CharField(max_length=100, blank=True)
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ("agent_id",)
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["idle", "active", "paused", "offline"]),
                name="runtime_status_valid",
            ),
        ]
        indexes = [models.Index(fields=["company", "status", "agent"], name="runtime_status")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.status}"


class Heartbeat(models.Model):
    """An agent's liveness signal (a ledger: agents append, nobody edits)."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="heartbeats")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="heartbeats")
    execution_id = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=50, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="heartbeat_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="heartbeat_agent_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} @ {self.created_at:%Y-%m-%d %H:%M:%S}"


class LifecycleEvent(models.Model):
    """Something that happened to an agent: hired, started, paused, resumed, retired, …

    Append-only (a trigger rejects UPDATE/DELETE/TRUNCATE, migration 0005); an agent or
    company with lifecycle history cannot be deleted (PROTECT), only deactivated.
    """

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="lifecycle_events")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="lifecycle_events")
    event_type = models.CharField(max_length=100)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="lifecycle_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="lifecycle_agent_time"
            ),
            models.Index(
                fields=["company", "event_type", "-created_at", "-id"], name="lifecycle_type_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} ({self.agent_id})"


class Checkpoint(models.Model):
    """A resumable snapshot of an execution (the agent deletes it once obsolete)."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="checkpoints")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="checkpoints")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="checkpoints"
    )
    execution_id = models.CharField(max_length=100)
    turn = models.PositiveIntegerField(default=0)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.UniqueConstraint(
                fields=["company", "execution_id", "turn"], name="checkpoint_unique_turn"
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="checkpoint_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="checkpoint_agent_time"
            ),
            models.Index(
                fields=["company", "task", "-created_at", "-id"], name="checkpoint_task_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.execution_id}#{self.turn}"


class ParkedContext(models.Model):
    """An execution suspended while waiting (approval, timeout); resumed later."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="parked_contexts")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="parked_contexts")
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="parked_contexts"
    )
    execution_id = models.CharField(max_length=100)
    reason = models.CharField(max_length=200, blank=True)
    context = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="parked_company_time"),
            models.Index(fields=["company", "execution_id"], name="parked_execution"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="parked_agent_time"
            ),
            models.Index(fields=["company", "task", "-created_at", "-id"], name="parked_task_time"),
        ]

    def __str__(self) -> str:
        return f"{self.execution_id} ({self.reason})"
