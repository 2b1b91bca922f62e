from __future__ import annotations

from django.db import models

from persistence.models.agents import Agent
from persistence.models.tasks import Task
from persistence.models.tenancy import Company

COST_MAX_DIGITS = 24
COST_DECIMAL_PLACES = 10


class CostRecord(models.Model):
    """One metered LLM call. Append-only (Postgres trigger): corrections are new records,
    e.g. a negative ``cost`` with ``details["corrects"]`` naming the record it offsets."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="cost_records")
    agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="cost_records"
    )
    task = models.ForeignKey(
        Task, on_delete=models.PROTECT, null=True, blank=True, related_name="cost_records"
    )
    provider = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Exact decimal money; never float. 10 places covers per-token prices.
    cost = models.DecimalField(max_digits=COST_MAX_DIGITS, decimal_places=COST_DECIMAL_PLACES)
    currency = models.CharField(max_length=3, default="USD")
    details = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-occurred_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(currency__regex=r"^[A-Z]{3}$"), name="cost_currency_iso"
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-occurred_at", "-id"], name="cost_company_time"),
            models.Index(
                fields=["company", "agent", "-occurred_at", "-id"], name="cost_agent_time"
            ),
            models.Index(fields=["company", "task", "-occurred_at", "-id"], name="cost_task_time"),
            models.Index(
                fields=["company", "model", "-occurred_at", "-id"], name="cost_model_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cost} {self.currency} {self.provider}/{self.model}"
