"""Admin for org memory. Humans write through the services, never by saving a model:

* a fact is created with the add form (``fact_publish``); editing it publishes a new
  version (the old one stays in the log, shown inline); there is no delete, only retract;
* write-access requests are approved or rejected with admin actions or on their page
  (rejecting needs a reason);
* the operation log is read-only.

Every action is attributed to ``request.user`` acting in the fact's company.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils.html import format_html

from orgmemory.approval_models import APPROVAL_EVENTS, WEBHOOK_EVENTS
from orgmemory.domain import OrgFactAuthor
from orgmemory.models import (
    ApprovalDecision,
    ApprovalItem,
    ApprovalWebhook,
    OperationLogEntry,
    OrgFact,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookDeliveryStatusChange,
    WriteAccessRequest,
    WriteRequestDecision,
)
from orgmemory.services.facts import fact_publish, fact_retract
from orgmemory.services.webhooks import webhook_configure, webhook_url_check
from orgmemory.services.write_requests import APPROVE, REASON_REQUIRED, REJECT, write_request_decide
from orgmemory.write_access import explain_write_access
from persistence.admin import LedgerAdmin
from persistence.admin_scoping import CompanyScopedAdmin, ReadOnlyScopedAdmin, admin_principal
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.errors import DomainError

_principal = admin_principal


def _check_human_may_write(request, company: Company, category: str, fact_id=None) -> None:
    """Form-level write-rule check, shown as a form error. Validation never writes: the
    denial is not audited here (nothing was attempted); ``fact_publish`` audits the
    denials of writes that are actually attempted."""
    decision = explain_write_access(
        company_config(company).org_memory.write_access, category, OrgFactAuthor(is_human=True)
    )
    if not decision.allowed:
        raise forms.ValidationError(
            f"Write to org memory denied: {decision.reason}", code="org_write_denied"
        )


class OrgFactAddForm(forms.ModelForm):
    class Meta:
        model = OrgFact
        fields = ("company", "category", "content", "tags")

    def clean(self):
        data = super().clean()
        if data.get("company") and data.get("category"):
            _check_human_may_write(self.request, data["company"], data["category"])
        return data


class OrgFactEditForm(forms.ModelForm):
    expected_version = forms.IntegerField(widget=forms.HiddenInput)
    retract = forms.BooleanField(
        required=False,
        help_text="Retract the fact: it stays in the log and its history but is no longer live.",
    )
    retract_reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    class Meta:
        model = OrgFact
        fields = ("content", "tags")
        help_texts = {"content": "Saving a change publishes a new version of this fact."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["expected_version"].initial = self.instance.version

    def clean(self):
        data = super().clean()
        _check_human_may_write(
            self.request, self.instance.company, self.instance.category, self.instance.pk
        )
        return data


class OperationLogInline(admin.TabularInline):
    model = OperationLogEntry
    fk_name = "fact"
    extra = 0
    can_delete = False
    ordering = ("-version",)
    verbose_name = "version"
    verbose_name_plural = "version history"
    fields = ("version", "operation_type", "content", "tags", "author", "timestamp")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="author")
    def author(self, entry):
        return _author_display(entry)


def _author_display(entry: OperationLogEntry) -> str:
    if entry.author_is_human:
        return f"human {entry.author_user}"
    text = f"agent {entry.author_agent} ({entry.author_seniority})"
    if entry.approved_by_id is not None:
        text += f", approved by {entry.approved_by}"
    return text


@admin.register(OrgFact)
class OrgFactAdmin(CompanyScopedAdmin):
    list_display = ("summary", "category", "company", "version", "updated_at", "retracted_at")
    list_filter = ("company", "category", ("retracted_at", admin.EmptyFieldListFilter))
    search_fields = ("content",)
    inlines = (OperationLogInline,)
    actions = ("retract_selected",)

    @admin.display(description="content")
    def summary(self, fact):
        return fact.content[:80]

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = OrgFactEditForm if obj is not None else OrgFactAddForm
        form = super().get_form(request, obj, change=change, **kwargs)
        form.request = request
        return form

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("company", "category", "content", "tags")
        if obj.is_retracted:
            return (
                "company",
                "category",
                "content",
                "tags",
                "version",
                "created_at",
                "retracted_at",
            )
        return (
            "company",
            "category",
            "version",
            "content",
            "tags",
            "retract",
            "retract_reason",
            "expected_version",
            "created_at",
            "updated_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        readonly = ("company", "category", "version", "created_at", "updated_at", "retracted_at")
        return (*readonly, "content", "tags") if obj.is_retracted else readonly

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.is_retracted:
            return False  # view only: a retracted fact cannot get new versions
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # facts are retracted, never deleted

    def save_model(self, request, obj, form, change):
        # Never obj.save(): the service appends the log row and moves the snapshot.
        data = form.cleaned_data
        if not change:
            company = data["company"]
            entry = fact_publish(
                company=company,
                actor=_principal(request, company),
                content=data["content"],
                category=data["category"],
                tags=data["tags"] or [],
            )
            obj.fact_id = entry.fact_id
        elif data.get("retract"):
            fact_retract(
                company=obj.company,
                actor=_principal(request, obj.company),
                fact_id=obj.pk,
                expected_version=data["expected_version"],
                reason=data.get("retract_reason") or "",
            )
        elif {"content", "tags"} & set(form.changed_data):
            fact_publish(
                company=obj.company,
                actor=_principal(request, obj.company),
                content=data["content"],
                category=obj.category,
                tags=data["tags"] or [],
                fact_id=obj.pk,
                expected_version=data["expected_version"],
            )
        obj.refresh_from_db()

    def get_inlines(self, request, obj):
        return () if obj is None else self.inlines

    @admin.action(description="Retract selected facts")
    def retract_selected(self, request, queryset):
        retracted = 0
        for fact in queryset.filter(retracted_at__isnull=True):
            try:
                fact_retract(
                    company=fact.company,
                    actor=_principal(request, fact.company),
                    fact_id=fact.pk,
                    reason="retracted in admin",
                )
                retracted += 1
            except DomainError as exc:
                self.message_user(request, f"{fact}: {exc.detail}", messages.ERROR)
        self.message_user(request, f"Retracted {retracted} fact(s).")


@admin.register(OperationLogEntry)
class OperationLogEntryAdmin(ReadOnlyScopedAdmin):
    list_display = ("fact_id", "version", "operation_type", "category", "author", "timestamp")
    list_filter = ("company", "operation_type", "category")
    search_fields = ("content", "=fact__fact_id")
    actions = None

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("author_agent", "author_user", "approved_by")
        )

    @admin.display(description="author")
    def author(self, entry):
        return _author_display(entry)


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="Told to the requesting agent.",
        error_messages={"required": REASON_REQUIRED},
    )

    def clean_reason(self):
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError(REASON_REQUIRED)
        return reason


class WriteRequestDecisionForm(forms.ModelForm):
    decision = forms.ChoiceField(
        choices=[("", "— undecided —"), (APPROVE, "Approve and publish"), (REJECT, "Reject")],
        required=False,
    )
    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Required to reject.",
    )

    class Meta:
        model = WriteAccessRequest
        fields = ()

    def clean(self):
        data = super().clean()
        if data.get("decision") == REJECT and not (data.get("reason") or "").strip():
            self.add_error("reason", REASON_REQUIRED)
        return data


@admin.register(WriteAccessRequest)
class WriteAccessRequestAdmin(CompanyScopedAdmin):
    form = WriteRequestDecisionForm
    list_display = (
        "created_at",
        "company",
        "requester",
        "category",
        "summary",
        "status",
        "decided_by",
    )
    list_filter = ("status", "category", "company")
    search_fields = ("content", "justification", "requester__name")
    actions = ("approve_selected", "reject_selected")
    readonly_fields = (
        "company",
        "requester",
        "requester_seniority",
        "category",
        "fact_id",
        "content",
        "tags",
        "justification",
        "status",
        "created_at",
        "decided_at",
        "decided_by",
        "decision_reason",
        "published_fact",
    )

    @admin.display(description="content")
    def summary(self, request_row):
        return request_row.content[:80]

    @admin.display(description="published version")
    def published_fact(self, request_row):
        entry = request_row.published_operation
        if entry is None:
            return "—"
        return format_html("fact {} version {}", entry.fact_id, entry.version)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("requester", "decided_by", "company", "published_operation")
        )

    def get_fields(self, request, obj=None):
        if obj is not None and obj.status == WriteAccessRequest.Status.PENDING:
            return (*self.readonly_fields, "decision", "reason")
        return self.readonly_fields

    def has_add_permission(self, request, *args):
        return False  # agents file requests through the API

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.status != WriteAccessRequest.Status.PENDING:
            return False
        return super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        decision = form.cleaned_data.get("decision")
        if decision:
            write_request_decide(
                company=obj.company,
                actor=_principal(request, obj.company),
                request_id=obj.pk,
                decision=decision,
                reason=form.cleaned_data.get("reason") or "",
            )
        obj.refresh_from_db()

    def _decide_all(self, request, queryset, decision: str, reason: str = "") -> None:
        done = 0
        for row in queryset:
            try:
                write_request_decide(
                    company=row.company,
                    actor=_principal(request, row.company),
                    request_id=row.pk,
                    decision=decision,
                    reason=reason,
                )
                done += 1
            except DomainError as exc:
                self.message_user(request, f"{row}: {exc.detail}", messages.ERROR)
        verb = "Approved" if decision == APPROVE else "Rejected"
        self.message_user(request, f"{verb} {done} request(s).")

    @admin.action(description="Approve selected requests (publishes the facts)")
    def approve_selected(self, request, queryset):
        self._decide_all(request, queryset, APPROVE)

    @admin.action(description="Reject selected requests (asks for a reason)")
    def reject_selected(self, request, queryset):
        form = RejectForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            self._decide_all(request, queryset, REJECT, form.cleaned_data["reason"])
            return None
        return TemplateResponse(
            request,
            "admin/orgmemory/writeaccessrequest/reject_selected.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "requests": queryset.select_related("requester"),
                "form": form,
                "title": "Reject write-access requests",
            },
        )


# --- approval queue ------------------------------------------------------------------------
# Items are decided in the operator console (/console/inbox/); the admin only shows them.


@admin.register(ApprovalItem)
class ApprovalItemAdmin(LedgerAdmin):
    list_display = ("title", "action_type", "risk_level", "status", "created_at", "decide_link")
    list_filter = ("company", "status", "risk_level", "action_type")
    search_fields = ("title", "description", "requested_by")

    @admin.display(description="console")
    def decide_link(self, item):
        return format_html('<a href="/console/inbox/items/{}">open in console</a>', item.pk)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(LedgerAdmin):
    list_display = ("event", "url", "status", "attempts", "reason", "created_at")
    list_filter = ("company", "status", "event")


# Append-only records (the database rejects UPDATE/DELETE): view-only, like every ledger.


@admin.register(ApprovalDecision)
class ApprovalDecisionAdmin(LedgerAdmin):
    list_display = ("item", "decision", "actor_user", "reason", "created_at")
    list_filter = ("company", "decision")
    list_select_related = ("item", "actor_user")


@admin.register(WebhookDeliveryAttempt)
class WebhookDeliveryAttemptAdmin(LedgerAdmin):
    list_display = ("delivery", "attempt", "status_code", "failure", "duration_ms", "created_at")
    list_filter = ("company", "failure")
    list_select_related = ("delivery",)


@admin.register(WebhookDeliveryStatusChange)
class WebhookDeliveryStatusChangeAdmin(LedgerAdmin):
    list_display = ("delivery", "status", "attempt", "reason", "actor", "created_at")
    list_filter = ("company", "status")
    list_select_related = ("delivery",)


@admin.register(WriteRequestDecision)
class WriteRequestDecisionAdmin(LedgerAdmin):
    list_display = ("request", "decision", "actor_user", "reason", "created_at")
    list_filter = ("company", "decision")
    list_select_related = ("request__requester", "actor_user")


class ApprovalWebhookForm(forms.ModelForm):
    url = forms.URLField(
        assume_scheme="https", max_length=ApprovalWebhook._meta.get_field("url").max_length
    )
    events = forms.MultipleChoiceField(
        choices=[(e, e) for e in WEBHOOK_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=list(APPROVAL_EVENTS),
        help_text="The events this endpoint receives (docs: Agents → Memory events).",
    )
    include_content = forms.BooleanField(
        required=False,
        label="Include content",
        help_text="Memory and lesson text in the payloads; off, they carry ids and metadata only.",
    )

    class Meta:
        model = ApprovalWebhook
        fields = ("company", "url", "secret", "enabled", "events", "include_content")

    def clean_url(self):
        url = self.cleaned_data["url"]
        try:
            return webhook_url_check(url)
        except DomainError as exc:
            raise forms.ValidationError(exc.errors[0]["message"], code=exc.code) from None


@admin.register(ApprovalWebhook)
class ApprovalWebhookAdmin(CompanyScopedAdmin):
    """Per-company webhook, set by company admins; saved through ``webhook_configure``."""

    form = ApprovalWebhookForm
    list_display = ("company", "url", "enabled", "include_content", "updated_at")
    fields = ("company", "url", "secret", "enabled", "events", "include_content")

    def save_model(self, request, obj, form, change):
        saved = webhook_configure(
            company=obj.company,
            url=obj.url,
            secret=obj.secret,
            enabled=obj.enabled,
            events=form.cleaned_data["events"],
            include_content=form.cleaned_data["include_content"],
            principal=_principal(request, obj.company),
        )
        obj.pk = saved.pk
