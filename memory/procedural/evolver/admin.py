from django.contrib import admin

from memory.procedural.evolver.models import (
    DraftFailure,
    DraftStatusChange,
    EvolverReport,
)
from persistence.admin import LedgerAdmin
from persistence.admin_scoping import ReadOnlyScopedAdmin


@admin.register(EvolverReport)
class EvolverReportAdmin(LedgerAdmin):
    """Cycle records are written by the evolver only."""

    list_display = (
        "started_at",
        "company",
        "trigger",
        "status",
        "method",
        "reports_scanned",
        "patterns_found",
        "proposals_emitted",
        "conflicts_escalated",
    )
    list_filter = ("company", "status", "trigger")


@admin.register(DraftFailure)
class DraftFailureAdmin(ReadOnlyScopedAdmin):
    """Written by the evolver and its retry schedule; operators re-queue from the console."""

    list_display = ("created_at", "company", "pattern", "status", "attempts", "next_attempt_at")
    list_filter = ("company", "status")


@admin.register(DraftStatusChange)
class DraftStatusChangeAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "draft", "status", "method", "attempt", "actor")
    list_filter = ("company", "status")
