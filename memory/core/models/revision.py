"""The text a human correction replaced (``memory_correct``), kept for the console's
correction history.

The audit entry of a correction (``memory.corrected``) is append-only and survives an
erasure, so it holds a SHA-256 of the replaced text, never the text. The text itself lives
here, beside the memory: deleted with it (an erasure, a deletion), never updated (a
``BEFORE UPDATE`` trigger refuses it; corrections are new rows)."""

from __future__ import annotations

import uuid

from django.db import models

from persistence.models import AuditEntry, Company


class MemoryRevision(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey("memory.Memory", on_delete=models.CASCADE, related_name="revisions")
    #: the correction's audit entry (its who, when, why and the replaced text's digest)
    audit_entry = models.OneToOneField(AuditEntry, on_delete=models.PROTECT, related_name="+")
    previous_content = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["memory", "created_at"], name="memory_revision_memory")]

    def __str__(self) -> str:
        return f"revision of {self.memory_id} at {self.created_at:%Y-%m-%d %H:%M}"
