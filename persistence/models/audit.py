from __future__ import annotations

from django.conf import settings
from django.db import models

from persistence.models.agents import Agent
from persistence.models.tenancy import Company


class AuditEntry(models.Model):
    """One security-relevant action. Append-only: a Postgres trigger rejects UPDATE/DELETE.

    Written by ``persistence.services.audit.audit_record`` in the same transaction as the
    action it records. The actor is an agent or a human user (or neither, for the system).
    """

    class Verdict(models.TextChoices):
        ALLOWED = "allowed", "Allowed"
        DENIED = "denied", "Denied"
        ERROR = "error", "Error"

    class RiskLevel(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        CRITICAL = "critical", "Critical"

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="audit_entries")
    actor_agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="audit_entries"
    )
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="audit_entries",
    )
    action_type = models.CharField(max_length=100)
    target_type = models.CharField(max_length=100, blank=True)
    target_id = models.CharField(max_length=100, blank=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, default=Verdict.ALLOWED)
    risk_level = models.CharField(max_length=16, choices=RiskLevel.choices, default=RiskLevel.LOW)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "audit entries"
        constraints = [
            models.CheckConstraint(
                condition=~(
                    models.Q(actor_agent__isnull=False) & models.Q(actor_user__isnull=False)
                ),
                name="audit_single_actor",
            ),
            models.CheckConstraint(
                condition=models.Q(verdict__in=["allowed", "denied", "error"]),
                name="audit_verdict_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(risk_level__in=["low", "medium", "high", "critical"]),
                name="audit_risk_level_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="audit_company_time"),
            models.Index(fields=["company", "actor_agent", "-created_at"], name="audit_agent"),
            models.Index(fields=["company", "action_type", "-created_at"], name="audit_action"),
            models.Index(
                fields=["company", "verdict", "-created_at", "-id"], name="audit_verdict_time"
            ),
            models.Index(
                fields=["company", "risk_level", "-created_at", "-id"], name="audit_risk_time"
            ),
            models.Index(
                fields=["company", "actor_user", "-created_at", "-id"], name="audit_user_time"
            ),
            # One object's history (a memory's corrections on its console page).
            models.Index(
                fields=["company", "target_type", "target_id", "created_at"], name="audit_target"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action_type} [{self.verdict}] @ {self.created_at:%Y-%m-%d %H:%M:%S}"
