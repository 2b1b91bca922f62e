"""Admin for tenancy and identity. Writes go through the services."""

from __future__ import annotations

import yaml
from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from persistence.models import Agent, AgentApiKey, ClusterHeartbeat, Company, CompanyMembership
from persistence.services.agents import api_key_issue, api_key_revoke
from persistence.services.companies import company_config_set, validate_company_config
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
