"""Admin page of re-embedding jobs: company-scoped, read-only, with their progress.

Jobs are started by the config service when a company's embedder changes (the company's
admin page saves through it); here an operator watches them and may queue a paused job
again ("Resume now") instead of waiting for its next attempt (a failed one is re-queued from
the console's failures page).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.utils.html import format_html

from memory.core.models.reembed import ReembedJob
from memory.core.services.reembed import enqueue_reembed_job
from persistence.admin_scoping import ReadOnlyScopedAdmin


@admin.register(ReembedJob)
class ReembedJobAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "id", "company", "to_embedder_id", "to_dims", "status", "phase", "progress",
        "updated_at", "reason",
    )  # fmt: skip
    list_filter = ("status",)
    ordering = ("-created_at", "-id")
    actions = ["resume_now"]
    readonly_fields = (
        "company", "from_embedder_id", "from_dims", "to_embedder_id", "to_dims", "status",
        "phase", "progress", "memories_done", "memories_total", "facts_done", "facts_total",
        "batches", "passes", "started_via", "created_at", "updated_at", "completed_at",
        "attempts", "next_attempt_at", "reason",
    )  # fmt: skip
    fields = readonly_fields

    @admin.display(description="progress")
    def progress(self, job: ReembedJob) -> str:
        return format_html(
            '<progress max="1" value="{}"></progress> {}% ({} / {} rows)',
            job.share_done,
            round(job.share_done * 100, 1),
            job.done,
            job.total,
        )

    @admin.action(description="Resume now (queue the selected running jobs)")
    def resume_now(self, request, queryset):
        queued = 0
        for job in queryset.filter(status=ReembedJob.Status.RUNNING):
            if not self._may_write(request, job):
                raise PermissionDenied(f"You may not resume jobs of {job.company}.")
            enqueue_reembed_job(job.pk)
            queued += 1
        self.message_user(request, f"{queued} job(s) queued.", messages.SUCCESS)
