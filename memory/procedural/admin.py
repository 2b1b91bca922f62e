"""Admin for procedural learning: company-scoped, and read-only but for one form.

Reports are append-only (the database refuses changes); lessons are written only by the
capture pipeline. Staff see the companies they are members of; superusers see all. The one
write is *Add org skill*: a person's skill, published through
:func:`~memory.procedural.services.operator_skills.operator_skill_publish` in a company the
staff user may write to.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from memory.procedural.models import CaptureStatus, ExecutionReport, OrgSkill, ProceduralLesson
from memory.procedural.services.operator_skills import (
    operator_skill_publish,
    operator_skill_validate,
)
from persistence.admin_scoping import CompanyScopedAdmin, ReadOnlyScopedAdmin
from synthorg.errors import InvalidInputError

#: the add form's fields, in order
OPERATOR_SKILL_FORM_FIELDS = (
    "company",
    "name",
    "discovery",
    "condition",
    "action",
    "rationale",
    "steps",
    "avoid",
    "task_type",
    "error_category",
    "tool",
)


class CaptureStatusFilter(admin.SimpleListFilter):
    title = "capture status"
    parameter_name = "capture_status"

    def lookups(self, request, model_admin):
        return CaptureStatus.choices

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(capture__status=self.value())
        return queryset


def _memory_link(memory_id) -> str:
    if memory_id is None:
        return "—"
    url = reverse("admin:memory_memory_change", args=[memory_id])
    return format_html('<a href="{}">{}</a>', url, memory_id)


@admin.register(ExecutionReport)
class ExecutionReportAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "created_at",
        "company",
        "agent",
        "outcome",
        "task_title",
        "error_category",
        "quality_score",
        "capture_status",
        "capture_method",
        "produced_memory",
    )
    list_filter = ("outcome", CaptureStatusFilter, "company")
    list_select_related = ("company", "agent", "capture")
    search_fields = ("task_title", "task_type", "error_category", "error_message", "=id")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    readonly_fields = (
        "id",
        "company",
        "agent",
        "task_id",
        "task_title",
        "task_type",
        "task_description",
        "outcome",
        "error_category",
        "error_message",
        "tool_calls",
        "retry_count",
        "turn_count",
        "quality_score",
        "duration_ms",
        "recovery",
        "redactions",
        "created_at",
        "capture_status",
        "capture_reason",
        "capture_method",
        "capture_attempts",
        "capture_history",
        "produced_memory",
    )
    fields = readonly_fields

    @admin.display(description="capture")
    def capture_status(self, report: ExecutionReport) -> str:
        capture = getattr(report, "capture", None)
        return capture.status if capture else "—"

    @admin.display(description="capture reason")
    def capture_reason(self, report: ExecutionReport) -> str:
        capture = getattr(report, "capture", None)
        return capture.reason if capture and capture.reason else "—"

    @admin.display(description="method")
    def capture_method(self, report: ExecutionReport) -> str:
        capture = getattr(report, "capture", None)
        return capture.method if capture and capture.method else "—"

    @admin.display(description="attempts (next)")
    def capture_attempts(self, report: ExecutionReport) -> str:
        capture = getattr(report, "capture", None)
        if capture is None:
            return "—"
        return f"{capture.attempts} (next: {capture.next_attempt_at or '—'})"

    @admin.display(description="status history")
    def capture_history(self, report: ExecutionReport) -> str:
        rows = report.capture_history.order_by("id")
        return (
            "\n".join(
                f"{r.created_at:%Y-%m-%d %H:%M:%S} {r.status} {r.method or ''} "
                f"#{r.attempt} {r.actor} {r.reason}".rstrip()
                for r in rows
            )
            or "—"
        )

    @admin.display(description="memory")
    def produced_memory(self, report: ExecutionReport) -> str:
        capture = getattr(report, "capture", None)
        return _memory_link(capture.memory_id if capture else None)


@admin.register(ProceduralLesson)
class ProceduralLessonAdmin(ReadOnlyScopedAdmin):
    list_display = (
        "created_at",
        "company",
        "skill_name",
        "agent",
        "origin",
        "method",
        "discovery",
    )
    list_filter = ("origin", "method", "company")
    list_select_related = ("company", "memory__agent")
    search_fields = ("skill_name", "discovery", "condition", "action")
    ordering = ("-created_at",)
    readonly_fields = (
        "memory_link",
        "agent",
        "company",
        "origin",
        "skill_name",
        "discovery",
        "condition",
        "action",
        "rationale",
        "execution_steps",
        "source_report",
        "propagated_from",
        "proposer_model",
        "method",
        "created_at",
    )
    fields = readonly_fields

    @admin.display(description="agent")
    def agent(self, lesson: ProceduralLesson):
        return lesson.memory.agent

    @admin.display(description="memory")
    def memory_link(self, lesson: ProceduralLesson) -> str:
        return _memory_link(lesson.memory_id)

    @admin.display(description="source report")
    def source_report(self, lesson: ProceduralLesson) -> str:
        if lesson.report_id is None:
            return "—"
        url = reverse("admin:procedural_executionreport_change", args=[lesson.report_id])
        return format_html('<a href="{}">{}</a>', url, lesson.report_id)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _skill_data(cleaned: dict) -> dict:
    """The service's input from the add form's cleaned data (steps and avoid: one a line)."""
    data = {k: cleaned.get(k) or "" for k in OPERATOR_SKILL_FORM_FIELDS[1:]}
    data["steps"] = _lines(data["steps"])
    data["avoid"] = _lines(data["avoid"])
    return data


class OperatorSkillAddForm(forms.ModelForm):
    """A person's skill, field by field (validated as the service validates it; the form
    never writes)."""

    name = forms.CharField(
        required=False, help_text="a-z, 0-9 and '-', at most 64; empty: made from the summary"
    )
    discovery = forms.CharField(
        label="summary", widget=forms.Textarea(attrs={"rows": 2}), help_text="What the skill is."
    )
    condition = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text="When.")
    action = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text="What to do.")
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text="Why.")
    steps = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), help_text="One per line.")
    avoid = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Actions not to take, one per line.",
    )
    task_type = forms.CharField(required=False, help_text="Applies to this task type only.")
    error_category = forms.CharField(required=False, help_text="… this error category only.")
    tool = forms.CharField(required=False, help_text="… this failing tool only.")

    class Meta:
        model = OrgSkill
        fields = ("company",)

    def clean(self):
        data = super().clean()
        if not self.errors:
            try:
                operator_skill_validate(_skill_data(data))
            except InvalidInputError as exc:
                for error in exc.errors or [{"field": None, "message": exc.detail}]:
                    field = str(error["field"] or "").split(".")[0]
                    target = field if field in self.fields else None
                    self.add_error(target, error["message"])
        return data


@admin.register(OrgSkill)
class OrgSkillAdmin(ReadOnlyScopedAdmin):
    """Written by the approval of an evolver promotion or an org-pool lesson, or added here
    by a person (``source`` ``operator``); counted by agents reporting an application."""

    list_display = (
        "created_at",
        "company",
        "source",
        "name",
        "confidence",
        "report_count",
        "application_count",
        "last_applied_at",
    )
    list_filter = ("company", "source")

    def has_add_permission(self, request, *args):
        return CompanyScopedAdmin.has_add_permission(self, request, *args)

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = OperatorSkillAddForm
            kwargs["fields"] = OPERATOR_SKILL_FORM_FIELDS
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        return OPERATOR_SKILL_FORM_FIELDS if obj is None else super().get_fields(request, obj)

    def create_via_service(self, principal, data):
        return operator_skill_publish(
            company=principal.company, actor=principal, data=_skill_data(data)
        )
