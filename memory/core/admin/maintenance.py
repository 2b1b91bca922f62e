"""Admin for the archive and the maintenance-run record: read-only (both are written only
by the maintenance service and the restore endpoint)."""

from __future__ import annotations

from django.contrib import admin

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from persistence.admin_scoping import ReadOnlyScopedAdmin


@admin.register(MaintenanceRun)
class MaintenanceRunAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "started_at",
        "company",
        "agent",
        "status",
        "trigger",
        "strategy",
        "retention_archived",
        "expired_archived",
        "consolidated",
        "enforced_archived",
        "shared_retracted",
        "archived",
        "deleted",
        "duration",
    )
    list_filter = ("status", "trigger", "strategy", "company")
    list_select_related = ("company", "agent")
    date_hierarchy = "started_at"
    search_fields = ("agent__name",)

    @admin.display(description="seconds")
    def duration(self, run: MaintenanceRun) -> str:
        if run.finished_at is None:
            return "—"
        return f"{(run.finished_at - run.started_at).total_seconds():.2f}"


@admin.register(ArchivedMemory)
class ArchivedMemoryAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "short_content",
        "agent",
        "company",
        "category",
        "namespace",
        "mode",
        "created_at",
        "archived_at",
        "restored_at",
    )
    list_filter = ("company", "category", "mode")
    list_select_related = ("company", "agent")
    search_fields = ("content", "original_id", "id")
    date_hierarchy = "archived_at"

    @admin.display(description="content")
    def short_content(self, row: ArchivedMemory) -> str:
        return row.content[:80]
