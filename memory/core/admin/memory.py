"""Admin: humans inspect memories here. Every write goes through the agent API and the
services (write gate, levels, audit), so the admin is read-only."""

from __future__ import annotations

from django.contrib import admin

from memory.core.models.memory import Memory
from persistence.admin_scoping import ReadOnlyScopedAdmin


@admin.register(Memory)
class MemoryAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "short_content",
        "agent",
        "company",
        "category",
        "namespace",
        "level",
        "is_shared",
        "embedding_status",
        "created_at",
        "expires_at",
        "superseded_at",
    )
    list_filter = ("company", "category", "level", "is_shared", "embedding_status")
    search_fields = ("content", "context", "namespace", "source", "id")
    list_select_related = ("agent", "company")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    exclude = ("embedding", "search_vector")
    readonly_fields = (
        "id",
        "company",
        "agent",
        "namespace",
        "category",
        "content",
        "context",
        "source",
        "confidence",
        "tags",
        "is_shared",
        "level",
        "session_id",
        "project",
        "created_at",
        "updated_at",
        "expires_at",
        "superseded_at",
        "superseded_by",
        "embedder_id",
        "embedding_status",
        "doc_length",
    )

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        return obj.content if len(obj.content) <= 80 else obj.content[:79] + "…"
