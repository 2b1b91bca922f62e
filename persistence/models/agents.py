from __future__ import annotations

from django.db import models
from django.utils import timezone

from persistence.models.tenancy import Company
from synthorg.enums import AutonomyLevel, MemoryLevel, SeniorityLevel


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value.replace("_", " ").title()) for member in enum]


class Agent(models.Model):
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=200)
    role = models.CharField(max_length=200, blank=True)
    department = models.CharField(max_length=200, blank=True)
    seniority = models.CharField(
        max_length=16, choices=_choices(SeniorityLevel), default=SeniorityLevel.MID
    )
    autonomy_level = models.CharField(
        max_length=16, choices=_choices(AutonomyLevel), default=AutonomyLevel.SEMI
    )
    memory_level = models.CharField(
        max_length=16, choices=_choices(MemoryLevel), default=MemoryLevel.PERSISTENT
    )
    # Per-agent retention overrides, validated by
    # synthorg.company_config.memory.AgentRetentionOverrides:
    # {"default_retention_days": int|null, "rules": [{"category": ..., "retention_days": int}]}
    retention_overrides = models.JSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["company", "name"], name="agent_unique_name"),
            models.CheckConstraint(
                condition=models.Q(seniority__in=[s.value for s in SeniorityLevel]),
                name="agent_seniority_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(autonomy_level__in=[a.value for a in AutonomyLevel]),
                name="agent_autonomy_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(memory_level__in=[m.value for m in MemoryLevel]),
                name="agent_memory_level_valid",
            ),
        ]
        ordering = ("company_id", "name")

    def __str__(self) -> str:
        return f"{self.name} ({self.company})"


class AgentApiKey(models.Model):
    """An agent credential. Only a SHA-256 digest of the key is stored; the key is shown once.

    Keys look like ``sok_<prefix>_<secret>``: the prefix is stored in clear to find the row,
    the digest of the whole key proves possession.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name = "agent API key"

    def __str__(self) -> str:
        return f"sok_{self.prefix}_… ({self.agent.name})"

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now
