"""The request log: one row per search or context call an agent made (what it asked, how
many results came back, how long it took, what was degraded). Bounded per company by the
retention schedule (``memory.request_log``)."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from persistence.models import Agent, Company

from .memory import subject_field


class RequestLogEntry(models.Model):
    class Kind(models.TextChoices):
        SEARCH = "search", "Search"
        SHARED_SEARCH = "shared_search", "Shared search"
        CONTEXT = "context", "Context"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="request_log")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="request_log")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    #: the interface the call came through: ``rest``, ``mcp`` or ``stdio``
    via = models.CharField(max_length=16)
    query = models.CharField(max_length=500)
    result_count = models.PositiveIntegerField()
    latency_ms = models.FloatField()
    degraded = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    #: the subject the call filtered by ("": none): erased with the subject
    subject = subject_field()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name_plural = "request log entries"
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="requestlog_company_time"),
            models.Index(fields=["company", "agent", "-created_at"], name="requestlog_agent_time"),
            models.Index(
                fields=["company", "subject"],
                condition=~Q(subject=""),
                name="requestlog_subject",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["search", "shared_search", "context"]),
                name="requestlog_kind_valid",
            ),
            models.CheckConstraint(condition=Q(latency_ms__gte=0), name="requestlog_latency_ge_0"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.agent_id}: {self.query[:40]}"
