"""Admin for tenancy and identity. Writes go through the services."""

from __future__ import annotations

import yaml
from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html

from persistence.models import (
    Agent,
    AgentApiKey,
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    ClusterHeartbeat,
    CollaborationMetric,
    Company,
    CompanyMembership,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from persistence.services.agents import api_key_issue, api_key_revoke
from persistence.services.audit import audit_record
from persistence.services.companies import company_config_set, validate_company_config
from persistence.services.settings import validate_setting_value
from synthorg.errors import DomainError


class CompanyAdminForm(forms.ModelForm):
    config_yaml = forms.CharField(
        label="Configuration (YAML)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "style": "font-family: monospace"}),
        help_text="The company's `memory:` and `org_memory:` sections. Empty means all defaults.",
    )

    class Meta:
        model = Company
        fields = ("name", "slug")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["config_yaml"].initial = yaml.safe_dump(
                self.instance.config, sort_keys=False
            )

    def clean_config_yaml(self):
        text = self.cleaned_data["config_yaml"] or ""
        try:
            data = yaml.safe_load(text) if text.strip() else {}
        except yaml.YAMLError as exc:
            raise forms.ValidationError(f"Not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise forms.ValidationError("The configuration must be a YAML mapping.")
        try:
            validate_company_config(data)
        except DomainError as exc:
            raise forms.ValidationError(
                [f"{e['field']}: {e['message']}" for e in exc.errors] or [exc.detail]
            ) from exc
        return data


class CompanyMembershipInline(admin.TabularInline):
    model = CompanyMembership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Company)
class CompanyAdmin(admin.ModelAdmin):
    form = CompanyAdminForm
    list_display = ("name", "slug", "config_revision", "created_at")
    search_fields = ("name", "slug")
    readonly_fields = ("config_revision", "created_at", "updated_at")
    inlines = (CompanyMembershipInline,)

    def save_model(self, request, obj, form, change):
        obj.save()
        company_config_set(company=obj, data=form.cleaned_data["config_yaml"])


class AgentApiKeyInline(admin.TabularInline):
    model = AgentApiKey
    extra = 0
    can_delete = False
    fields = ("prefix", "name", "created_at", "expires_at", "last_used_at", "revoked_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "company",
        "role",
        "seniority",
        "autonomy_level",
        "memory_level",
        "is_active",
    )
    list_filter = ("company", "seniority", "autonomy_level", "memory_level", "is_active")
    search_fields = ("name", "role", "department")
    inlines = (AgentApiKeyInline,)
    actions = ("issue_api_key",)

    @admin.action(description="Issue a new API key (shown once)")
    def issue_api_key(self, request, queryset):
        for agent in queryset:
            issued = api_key_issue(
                agent=agent,
                name=f"admin:{request.user.get_username()}",
                actor_user=request.user,
            )
            self.message_user(
                request,
                format_html(
                    "New key for <b>{}</b> (copy it now, it is not shown again): <code>{}</code>",
                    agent.name,
                    issued.raw_key,
                ),
                level=messages.WARNING,
            )


@admin.register(AgentApiKey)
class AgentApiKeyAdmin(admin.ModelAdmin):
    list_display = ("__str__", "agent", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("agent__company",)
    search_fields = ("prefix", "agent__name")
    readonly_fields = ("agent", "prefix", "key_hash", "created_at", "last_used_at", "revoked_at")
    fields = ("agent", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False  # keys are issued from the agent page so the raw key can be shown once

    def has_delete_permission(self, request, obj=None):
        return False  # revoked keys stay for the record

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(key=key, actor_user=request.user)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} key(s) at {timezone.now():%Y-%m-%d %H:%M}.")


@admin.register(CompanyMembership)
class CompanyMembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "company", "role", "created_at")
    list_filter = ("company", "role")
    autocomplete_fields = ("user",)


@admin.register(ClusterHeartbeat)
class ClusterHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("cluster", "beat_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# Operational data -------------------------------------------------------------------------


class LedgerAdmin(admin.ModelAdmin):
    """Read-only admin for append-only records: no add, change, delete or bulk actions.

    The database trigger (for audit entries and cost records) is the real guard; this only
    keeps the admin honest about it.
    """

    actions = None

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(LedgerAdmin):
    list_display = (
        "created_at",
        "company",
        "action_type",
        "actor_agent",
        "actor_user",
        "target_type",
        "target_id",
        "verdict",
        "risk_level",
    )
    list_filter = ("company", "verdict", "risk_level", "action_type")
    list_select_related = ("company", "actor_agent", "actor_user")
    search_fields = ("action_type", "target_type", "target_id")
    date_hierarchy = "created_at"


@admin.register(CostRecord)
class CostRecordAdmin(LedgerAdmin):
    list_display = (
        "occurred_at",
        "company",
        "agent",
        "task",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "cost",
        "currency",
    )
    list_filter = ("company", "currency", "provider", "model")
    list_select_related = ("company", "agent", "task")
    search_fields = ("model", "provider")
    date_hierarchy = "occurred_at"


@admin.register(Message)
class MessageAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "channel", "sender_agent", "sender_user", "content")
    list_filter = ("company", "channel")
    list_select_related = ("company", "sender_agent", "sender_user")
    search_fields = ("channel", "content")
    date_hierarchy = "created_at"


@admin.register(Heartbeat)
class HeartbeatAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "agent", "execution_id", "status")
    list_filter = ("company", "status")
    list_select_related = ("company", "agent")
    date_hierarchy = "created_at"


@admin.register(LifecycleEvent)
class LifecycleEventAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "agent", "event_type")
    list_filter = ("company", "event_type")
    list_select_related = ("company", "agent")
    date_hierarchy = "created_at"


@admin.register(TaskMetric)
class TaskMetricAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "task", "agent", "success", "turns", "tokens")
    list_filter = ("company", "success")
    list_select_related = ("company", "task", "agent")
    date_hierarchy = "created_at"


@admin.register(CollaborationMetric)
class CollaborationMetricAdmin(LedgerAdmin):
    list_display = ("created_at", "company", "agent", "peer", "interaction_type", "score")
    list_filter = ("company", "interaction_type")
    list_select_related = ("company", "agent", "peer")
    date_hierarchy = "created_at"


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("title", "company", "status", "assignee", "project", "created_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "assignee", "project")
    search_fields = ("title", "description")
    date_hierarchy = "created_at"
    raw_id_fields = ("assignee", "created_by", "project")
    readonly_fields = ("created_at", "updated_at", "completed_at")

    def save_model(self, request, obj, form, change):
        now = timezone.now()
        if not change:
            obj.created_at = now
        obj.updated_at = now
        super().save_model(request, obj, form, change)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "company", "status", "lead", "created_at", "closed_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "lead")
    search_fields = ("name",)
    date_hierarchy = "created_at"
    raw_id_fields = ("lead",)
    readonly_fields = ("closed_at",)


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ("name", "company", "artifact_type", "task", "created_by", "created_at")
    list_filter = ("company", "artifact_type")
    list_select_related = ("company", "task", "created_by")
    search_fields = ("name", "uri")
    date_hierarchy = "created_at"
    raw_id_fields = ("task", "created_by")
    readonly_fields = ("created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        now = timezone.now()
        if not change:
            obj.created_at = now
        obj.updated_at = now
        super().save_model(request, obj, form, change)


@admin.register(ParkedContext)
class ParkedContextAdmin(admin.ModelAdmin):
    list_display = (
        "execution_id",
        "company",
        "agent",
        "task",
        "reason",
        "created_at",
        "resumed_at",
    )
    list_filter = ("company",)
    list_select_related = ("company", "agent", "task")
    search_fields = ("execution_id", "reason")
    date_hierarchy = "created_at"
    readonly_fields = ("company", "agent", "task", "execution_id", "created_at")


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("execution_id", "turn", "company", "agent", "task", "created_at")
    list_filter = ("company",)
    list_select_related = ("company", "agent", "task")
    search_fields = ("execution_id",)
    date_hierarchy = "created_at"
    readonly_fields = ("company", "agent", "task", "execution_id", "turn", "created_at")

    def has_add_permission(self, request):
        return False


@admin.register(AgentRuntimeState)
class AgentRuntimeStateAdmin(admin.ModelAdmin):
    list_display = ("agent", "company", "status", "current_task", "execution_id", "updated_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "agent", "current_task")
    date_hierarchy = "updated_at"
    readonly_fields = ("company", "agent", "updated_at")

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        obj.updated_at = timezone.now()
        super().save_model(request, obj, form, change)


class SettingAdminForm(forms.ModelForm):
    class Meta:
        model = Setting
        fields = ("company", "namespace", "key", "value")

    def clean(self):
        cleaned = super().clean()
        if {"namespace", "key", "value"} <= cleaned.keys():
            try:
                cleaned["value"] = validate_setting_value(
                    cleaned["namespace"], cleaned["key"], cleaned["value"]
                )
            except DomainError as exc:
                raise forms.ValidationError(
                    [f"{e['field']}: {e['message']}" for e in exc.errors] or [exc.detail]
                ) from exc
        return cleaned


@admin.register(Setting)
class SettingAdmin(admin.ModelAdmin):
    form = SettingAdminForm
    list_display = ("namespace", "key", "company", "updated_at", "updated_by")
    list_filter = ("company", "namespace")
    list_select_related = ("company", "updated_by")
    search_fields = ("namespace", "key")
    date_hierarchy = "updated_at"

    def save_model(self, request, obj, form, change):
        with transaction.atomic():
            now = timezone.now()
            if not change:
                obj.created_at = now
            obj.updated_at = now
            obj.updated_by = request.user
            obj.value = form.cleaned_data["value"]
            super().save_model(request, obj, form, change)
            audit_record(
                company=obj.company,
                actor_user=request.user,
                action_type="setting.changed",
                target_type="setting",
                target_id=f"{obj.namespace}.{obj.key}",
                risk_level="medium",
                details={"value": obj.value, "via": "admin"},
            )


@admin.register(PersonalityPreset)
class PersonalityPresetAdmin(admin.ModelAdmin):
    list_display = ("name", "company", "updated_at")
    list_filter = ("company",)
    search_fields = ("name", "description")
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "updated_at")

    def save_model(self, request, obj, form, change):
        now = timezone.now()
        if not change:
            obj.created_at = now
        obj.updated_at = now
        super().save_model(request, obj, form, change)
