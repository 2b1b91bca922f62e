from __future__ import annotations

from django.conf import settings
from django.db import models


class Company(models.Model):
    """A tenant: a fleet of agents and the humans who run them. Nothing crosses companies."""

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    # The validated `memory:` / `org_memory:` config (see synthorg.company_config),
    # stored as its normalised JSON dump. `config_revision` bumps on every change so the
    # cached accessor knows when to re-parse.
    config = models.JSONField(default=dict, blank=True)
    config_revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        verbose_name_plural = "companies"

    def __str__(self) -> str:
        return self.name


class CompanyMembership(models.Model):
    """A human operator's role in one company."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        OPERATOR = "operator", "Operator"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="company_memberships"
    )
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OPERATOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "company"], name="membership_unique_user"),
            models.CheckConstraint(
                condition=models.Q(role__in=["owner", "admin", "operator", "viewer"]),
                name="membership_role_valid",
            ),
        ]
        ordering = ("company_id", "user_id")

    def __str__(self) -> str:
        return f"{self.user} @ {self.company} ({self.role})"

    @property
    def can_write(self) -> bool:
        return self.role != self.Role.VIEWER
