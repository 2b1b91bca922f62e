from django.contrib import admin

from memory.procedural.evolver.models import EvolverReport
from persistence.admin import LedgerAdmin


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
