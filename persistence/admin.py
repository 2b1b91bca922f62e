"""Admin for tenancy, identity and operational data.

Every admin here is a :class:`~persistence.admin_scoping.CompanyScopedAdmin`: staff see only
their companies, and writes go through the services (same permission table, side effects
and audit entries as the API).
"""

from __future__ import annotations

import yaml
from axes import admin as axes_admin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.utils import timezone
from django.utils.html import format_html

from persistence.admin_scoping import CompanyScopedAdmin, ReadOnlyScopedAdmin, admin_principal
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
from persistence.selectors.identity import human_companies
from persistence.services.agents import (
    AGENT_EDITABLE,
    AGENT_FIELDS,
    agent_create,
    agent_update,
    api_key_issue,
    api_key_revoke,
    retention_overrides_checked,
)
from persistence.services.artifacts import (
    ARTIFACT_FIELDS,
    artifact_create,
    artifact_delete,
    artifact_update,
)
from persistence.services.companies import (
    CONFIG_REVISION_CONFLICT,
    company_config_for_editing,
    company_config_from_yaml,
    company_config_set,
    company_create,
    company_rename,
    membership_remove,
    membership_set,
)
from persistence.services.erasure import agent_erase
from persistence.services.presets import PRESET_FIELDS, preset_create, preset_delete, preset_update
from persistence.services.projects import (
    PROJECT_FIELDS,
    project_create,
    project_delete,
    project_update,
)
from persistence.services.runtime import (
    checkpoint_delete,
    parked_context_delete,
    parked_context_resume,
    runtime_state_set,
)
from persistence.services.settings import setting_delete, setting_set, validate_setting_value
from persistence.services.tasks import TASK_FIELDS, task_create, task_delete, task_update
from synthorg.errors import DomainError


def _form_errors(exc: DomainError) -> list[str]:
    return [
        f"{e['field']}: {e['message']}" if e.get("field") else e["message"] for e in exc.errors
    ] or [exc.detail]


IGNORED_SECTIONS = (
    "Ignored top-level sections (this service reads only memory and org_memory): {names}."
)


def _say_ignored_sections(request, form) -> None:
    ignored = getattr(form, "ignored_sections", ())
    if ignored:
        messages.warning(request, IGNORED_SECTIONS.format(names=", ".join(ignored)))


class CompanyAdminForm(forms.ModelForm):
    config_yaml = forms.CharField(
        label="Configuration (YAML)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "class": "config-yaml"}),
        help_text=(
            "The company's memory: and org_memory: sections. Empty means all defaults. "
            "org_memory.core_policies is the live list agents receive; editing it versions "
            "each change."
        ),
    )
    # The revision the editor loaded: a save from an older one is refused (409 in the API).
    config_revision_loaded = forms.IntegerField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Company
        fields = ("name", "slug")

    class Media:
        # A class, not an inline style: the Content-Security-Policy forbids inline styles.
        css = {"all": ("persistence/admin.css",)}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["config_yaml"].initial = yaml.safe_dump(
                company_config_for_editing(self.instance), sort_keys=False
            )
            self.fields["config_revision_loaded"].initial = self.instance.config_revision

    def clean_config_revision_loaded(self):
        loaded = self.cleaned_data.get("config_revision_loaded")
        if self.instance.pk and loaded is not None:
            current = Company.objects.values_list("config_revision", flat=True).get(
                pk=self.instance.pk
            )
            if loaded != current:
                raise forms.ValidationError(
                    CONFIG_REVISION_CONFLICT.format(current=current, expected=loaded)
                )
        return loaded

    def clean_config_yaml(self):
        # Parses and validates only: nothing is written until the services run on save.
        try:
            data, ignored = company_config_from_yaml(
                self.cleaned_data["config_yaml"] or "",
                company_id=self.instance.pk,
            )
        except DomainError as exc:
            raise forms.ValidationError(_form_errors(exc)) from exc
        self.ignored_sections = ignored  # said on save: nothing is dropped silently
        return data


@admin.register(Company)
class CompanyAdmin(CompanyScopedAdmin):
    form = CompanyAdminForm
    company_lookup = ""
    list_display = ("name", "slug", "id", "config_revision", "created_at")
    search_fields = ("name", "slug")
    readonly_fields = ("config_revision", "created_at", "updated_at")

    def has_add_permission(self, request, *args):
        return request.user.is_superuser  # a new tenant is an operator-of-the-service act

    def has_delete_permission(self, request, obj=None):
        return False  # a company is never deleted from the admin (ledgers reference it)

    def save_model(self, request, obj, form, change):
        _say_ignored_sections(request, form)
        data = form.cleaned_data["config_yaml"]
        if not change:
            created = company_create(name=obj.name, slug=obj.slug, config=data)
            obj.pk = created.pk
            obj._state.adding = False
            return
        principal = admin_principal(request, obj)
        company = company_rename(company=obj, name=obj.name, slug=obj.slug, principal=principal)
        company_config_set(
            company=company,
            data=data,
            principal=principal,
            via="admin",
            expected_revision=form.cleaned_data.get("config_revision_loaded"),
        )


class AgentApiKeyInline(admin.TabularInline):
    model = AgentApiKey
    extra = 0
    can_delete = False
    fields = ("prefix", "name", "created_at", "expires_at", "last_used_at", "revoked_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


class AgentAdminForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ("company", *AGENT_EDITABLE)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.instance.pk and "memory_level" in self.fields:
            # Empty = the company's memory.level (its default level for new agents); every
            # level stays on offer (the model field has no blank choice to drop).
            field = self.fields["memory_level"]
            field.required = False
            levels = [(value, label) for value, label in field.choices if value != ""]
            field.choices = [("", "— company default (memory.level) —"), *levels]
            self.initial["memory_level"] = ""
        if "retention_overrides" in self.fields:
            self.fields["retention_overrides"].required = False
            self.fields["retention_overrides"].help_text = (
                'Empty means none. E.g. {"default_retention_days": 30, "rules": '
                '[{"category": "episodic", "retention_days": 7}]}'
            )

    def clean_retention_overrides(self):
        # Validates only (the service checks again when it writes): blank means {}.
        try:
            return retention_overrides_checked(self.cleaned_data.get("retention_overrides"))
        except DomainError as exc:
            raise forms.ValidationError(exc.detail) from exc


@admin.register(Agent)
class AgentAdmin(CompanyScopedAdmin):
    form = AgentAdminForm
    service_fields = tuple(AGENT_FIELDS)
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
    actions = ("issue_api_key", "erase_content")

    def get_readonly_fields(self, request, obj=None):
        return ("company",) if obj is not None else ()

    def create_via_service(self, principal, data):
        fields = {f: data[f] for f in AGENT_FIELDS if f in data and f != "name"}
        fields["memory_level"] = data.get("memory_level") or None
        return agent_create(
            company=principal.company, name=data["name"], principal=principal, **fields
        )

    def update_via_service(self, principal, obj, changes):
        return agent_update(agent=obj, principal=principal, **changes)

    def principal_for(self, request, obj):
        return admin_principal(request, obj.company)

    @admin.action(description="Issue a new API key (shown once)")
    def issue_api_key(self, request, queryset):
        for agent in queryset:
            issued = api_key_issue(
                agent=agent,
                name=f"admin:{request.user.get_username()}",
                principal=admin_principal(request, agent.company),
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

    @admin.action(description="Erase all memory content of the selected agents and deactivate them")
    def erase_content(self, request, queryset):
        for agent in queryset:
            report = agent_erase(
                agent=agent,
                principal=admin_principal(request, agent.company),
                reason=f"admin erase by {request.user.get_username()}",
            )
            self.message_user(
                request,
                f"Erased {agent.name}: "
                + ", ".join(f"{k} {v}" for k, v in report.counts.items())
                + "; agent deactivated, keys revoked.",
            )


@admin.register(AgentApiKey)
class AgentApiKeyAdmin(CompanyScopedAdmin):
    company_lookup = "agent__company"
    list_display = ("__str__", "agent", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("agent__company",)
    search_fields = ("prefix", "agent__name")
    fields = ("agent", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    actions = ("revoke",)

    def has_add_permission(self, request, *args):
        return False  # keys are issued from the agent page so the raw key can be shown once

    def has_change_permission(self, request, obj=None):
        # Nothing is edited in place (the page is view-only); the revoke action needs it.
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # revoked keys stay for the record

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True).select_related("agent__company"):
            api_key_revoke(key=key, principal=admin_principal(request, key.agent.company))
            revoked += 1
        self.message_user(request, f"Revoked {revoked} key(s) at {timezone.now():%Y-%m-%d %H:%M}.")


@admin.register(CompanyMembership)
class CompanyMembershipAdmin(CompanyScopedAdmin):
    list_display = ("user", "company", "role", "created_at")
    list_filter = ("company", "role")
    autocomplete_fields = ("user",)
    service_fields = ("role",)

    def get_readonly_fields(self, request, obj=None):
        return ("user", "company") if obj is not None else ()

    def create_via_service(self, principal, data):
        return membership_set(
            company=principal.company, user=data["user"], role=data["role"], principal=principal
        )

    def update_via_service(self, principal, obj, changes):
        role = changes.get("role", obj.role)
        return membership_set(company=obj.company, user=obj.user, role=role, principal=principal)

    def delete_via_service(self, principal, obj):
        membership_remove(membership=obj, principal=principal)


@admin.register(ClusterHeartbeat)
class ClusterHeartbeatAdmin(admin.ModelAdmin):
    """Service-wide worker heartbeats: no company, so superusers only."""

    list_display = ("cluster", "beat_at")

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# Operational data -------------------------------------------------------------------------


class LedgerAdmin(ReadOnlyScopedAdmin):
    """Read-only admin for append-only records: no add, change, delete or bulk actions.

    The database trigger (for audit entries and cost records) is the real guard; this only
    keeps the admin honest about it.
    """


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


class _CompanyFirstAdmin(CompanyScopedAdmin):
    """Mutable company records: the company is chosen on add and fixed afterwards."""

    def get_readonly_fields(self, request, obj=None):
        fixed = tuple(self.readonly_fields)
        return ("company", *fixed) if obj is not None else fixed

    def principal_for(self, request, obj):
        return admin_principal(request, obj.company)


@admin.register(Task)
class TaskAdmin(_CompanyFirstAdmin):
    list_display = ("title", "company", "status", "assignee", "project", "created_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "assignee", "project")
    search_fields = ("title", "description")
    date_hierarchy = "created_at"
    raw_id_fields = ("assignee", "project")
    fields = ("company", "title", "description", "status", "assignee", "project")
    readonly_fields = ("created_by", "created_at", "updated_at", "completed_at")
    service_fields = tuple(TASK_FIELDS)

    def get_fields(self, request, obj=None):
        return self.fields + (self.readonly_fields if obj is not None else ())

    def create_via_service(self, principal, data):
        return task_create(principal=principal, **{f: data[f] for f in TASK_FIELDS if f in data})

    def update_via_service(self, principal, obj, changes):
        return task_update(principal=principal, task=obj, **changes)

    def delete_via_service(self, principal, obj):
        task_delete(principal=principal, task=obj)


@admin.register(Project)
class ProjectAdmin(_CompanyFirstAdmin):
    """Closing a project here (status completed/cancelled) runs ``project_close``: the
    project's project-level memories are purged and the close is audited."""

    list_display = ("name", "company", "status", "lead", "created_at", "closed_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "lead")
    search_fields = ("name",)
    date_hierarchy = "created_at"
    raw_id_fields = ("lead",)
    readonly_fields = ("closed_at",)
    service_fields = tuple(PROJECT_FIELDS)

    def create_via_service(self, principal, data):
        project = project_create(
            company=principal.company,
            principal=principal,
            name=data["name"],
            description=data.get("description", ""),
            lead=data.get("lead"),
        )
        if data.get("status") and data["status"] != project.status:
            project = project_update(principal=principal, project=project, status=data["status"])
        return project

    def update_via_service(self, principal, obj, changes):
        return project_update(principal=principal, project=obj, **changes)

    def delete_via_service(self, principal, obj):
        project_delete(principal=principal, project=obj)


@admin.register(Artifact)
class ArtifactAdmin(_CompanyFirstAdmin):
    list_display = ("name", "company", "artifact_type", "task", "created_by", "created_at")
    list_filter = ("company", "artifact_type")
    list_select_related = ("company", "task", "created_by")
    search_fields = ("name", "uri")
    date_hierarchy = "created_at"
    raw_id_fields = ("task", "created_by")
    readonly_fields = ("created_at", "updated_at")
    service_fields = tuple(ARTIFACT_FIELDS)

    def get_readonly_fields(self, request, obj=None):
        base = super().get_readonly_fields(request, obj)
        return (*base, "created_by") if obj is not None else base

    def create_via_service(self, principal, data):
        fields = {f: data[f] for f in (*ARTIFACT_FIELDS, "created_by") if f in data}
        return artifact_create(principal=principal, **fields)

    def update_via_service(self, principal, obj, changes):
        return artifact_update(principal=principal, artifact=obj, **changes)

    def delete_via_service(self, principal, obj):
        artifact_delete(principal=principal, artifact=obj)


@admin.register(ParkedContext)
class ParkedContextAdmin(_CompanyFirstAdmin):
    """Parked by agents through the API; people resume (action) or delete them here."""

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
    readonly_fields = (
        "agent",
        "task",
        "execution_id",
        "reason",
        "context",
        "created_at",
        "resumed_at",
    )
    actions = ("resume_selected",)

    def has_add_permission(self, request, *args):
        return False

    def delete_via_service(self, principal, obj):
        parked_context_delete(principal=principal, parked=obj)

    @admin.action(description="Mark selected contexts as resumed")
    def resume_selected(self, request, queryset):
        resumed = 0
        for parked in queryset.filter(resumed_at__isnull=True):
            parked_context_resume(principal=admin_principal(request, parked.company), parked=parked)
            resumed += 1
        self.message_user(request, f"Resumed {resumed} parked context(s).")


@admin.register(Checkpoint)
class CheckpointAdmin(_CompanyFirstAdmin):
    list_display = ("execution_id", "turn", "company", "agent", "task", "created_at")
    list_filter = ("company",)
    list_select_related = ("company", "agent", "task")
    search_fields = ("execution_id",)
    date_hierarchy = "created_at"
    readonly_fields = ("agent", "task", "execution_id", "turn", "state", "created_at")

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # a checkpoint is a snapshot; it is deleted, never edited

    def delete_via_service(self, principal, obj):
        checkpoint_delete(principal=principal, checkpoint=obj)


@admin.register(AgentRuntimeState)
class AgentRuntimeStateAdmin(_CompanyFirstAdmin):
    list_display = ("agent", "company", "status", "current_task", "execution_id", "updated_at")
    list_filter = ("company", "status")
    list_select_related = ("company", "agent", "current_task")
    date_hierarchy = "updated_at"
    raw_id_fields = ("current_task",)
    readonly_fields = ("agent", "updated_at")
    service_fields = ("status", "current_task", "execution_id", "state")

    def has_add_permission(self, request, *args):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def update_via_service(self, principal, obj, changes):
        data = {f: getattr(obj, f) for f in self.service_fields} | changes
        return runtime_state_set(principal=principal, agent=obj.agent, **data)


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
                raise forms.ValidationError(_form_errors(exc)) from exc
        return cleaned


@admin.register(Setting)
class SettingAdmin(_CompanyFirstAdmin):
    form = SettingAdminForm
    list_display = ("namespace", "key", "company", "updated_at", "updated_by")
    list_filter = ("company", "namespace")
    list_select_related = ("company", "updated_by")
    search_fields = ("namespace", "key")
    date_hierarchy = "updated_at"
    service_fields = ("value",)

    def get_readonly_fields(self, request, obj=None):
        return ("company", "namespace", "key") if obj is not None else ()

    def create_via_service(self, principal, data):
        return setting_set(
            principal=principal, namespace=data["namespace"], key=data["key"], value=data["value"]
        )

    def update_via_service(self, principal, obj, changes):
        value = changes.get("value", obj.value)
        return setting_set(principal=principal, namespace=obj.namespace, key=obj.key, value=value)

    def delete_via_service(self, principal, obj):
        setting_delete(principal=principal, setting=obj)


@admin.register(PersonalityPreset)
class PersonalityPresetAdmin(_CompanyFirstAdmin):
    list_display = ("name", "company", "updated_at")
    list_filter = ("company",)
    search_fields = ("name", "description")
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "updated_at")
    service_fields = tuple(PRESET_FIELDS)

    def create_via_service(self, principal, data):
        return preset_create(
            principal=principal, **{f: data[f] for f in PRESET_FIELDS if f in data}
        )

    def update_via_service(self, principal, obj, changes):
        return preset_update(principal=principal, preset=obj, **changes)

    def delete_via_service(self, principal, obj):
        preset_delete(principal=principal, preset=obj)


# People ----------------------------------------------------------------------------------


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class ScopedUserAdmin(UserAdmin):
    """Staff see the people of their companies (view only); only superusers manage
    accounts, groups and permissions — editing them is how a staff user would escalate."""

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        companies = human_companies(request.user)
        return queryset.filter(company_memberships__company__in=companies).distinct()

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(Group)
class SuperuserGroupAdmin(GroupAdmin):
    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


# Login attempts (django-axes) ---------------------------------------------------------------
# Usernames and addresses of every company's people: the server operator's, not a tenant's.


class _SuperuserOnly:
    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


admin.site.unregister(AccessAttempt)
admin.site.unregister(AccessLog)
admin.site.unregister(AccessFailureLog)


@admin.register(AccessAttempt)
class SuperuserAccessAttemptAdmin(_SuperuserOnly, axes_admin.AccessAttemptAdmin):
    pass


@admin.register(AccessLog)
class SuperuserAccessLogAdmin(_SuperuserOnly, axes_admin.AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class SuperuserAccessFailureLogAdmin(_SuperuserOnly, axes_admin.AccessFailureLogAdmin):
    pass
