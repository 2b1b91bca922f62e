from __future__ import annotations

from django.conf import settings
from django.db import models

from persistence.models.agents import Agent
from persistence.models.tenancy import Company


class Message(models.Model):
    """A message posted to a company channel by an agent or a human. Immutable once sent."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="messages")
    channel = models.CharField(max_length=200)
    sender_agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="sent_messages"
    )
    sender_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sent_messages",
    )
    content = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=~(
                    models.Q(sender_agent__isnull=False) & models.Q(sender_user__isnull=False)
                ),
                name="message_single_sender",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="message_company_time"),
            models.Index(
                fields=["company", "channel", "-created_at", "-id"], name="message_channel_time"
            ),
            models.Index(
                fields=["company", "sender_agent", "-created_at", "-id"],
                name="message_sender_time",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.channel}: {self.content[:60]}"
