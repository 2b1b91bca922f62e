"""The one ModelAdmin base every admin of a company-owned model uses.

Staff who are not superusers see and touch only the companies they are members of: the
changelist, the change/delete views, bulk actions, and the choices offered by foreign-key
and many-to-many fields (including raw-id and autocomplete lookups, which go through the
related model's admin) are all filtered to those companies. Writing needs a non-viewer
membership in the object's company. Superusers see every company.

Writes never save the model: a subclass names its services (``create_via_service``,
``update_via_service``, ``delete_via_service``) and this base calls them with a
:class:`~persistence.principal.Principal` built by the one human-principal selector, so the
admin gets the same permission checks, side effects and audit entries as the API. A
:class:`~synthorg.errors.DomainError` raised by a service becomes an error message (the
transaction of the admin view has rolled back by then).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.http import HttpResponseRedirect

from persistence.models import Company
from persistence.principal import Principal
from persistence.selectors.identity import human_companies, human_principal
from synthorg.errors import DomainError

NOT_A_WRITER = "You are not a member allowed to write in {company}."


def admin_principal(request, company: Company) -> Principal:
    """The logged-in human acting in ``company``, or ``PermissionDenied``."""
    principal = human_principal(request.user, company=company)
    if principal is None or not principal.can_write:
        raise PermissionDenied(NOT_A_WRITER.format(company=company))
    return principal


class CompanyScopedAdmin(admin.ModelAdmin):
    """Scopes querysets, choices and object access to the staff user's companies."""

    #: ORM path from this model to its ``Company`` ("" when the model *is* Company).
    company_lookup = "company"
    #: Fields whose changes are handed to ``update_via_service``.
    service_fields: tuple[str, ...] = ()

    # --- scoping ---------------------------------------------------------------------------

    def _company_filter(self, companies) -> dict:
        return {f"{self.company_lookup}__in" if self.company_lookup else "pk__in": companies}

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**self._company_filter(human_companies(request.user)))

    def company_of(self, obj) -> Company | None:
        if not self.company_lookup:
            return obj
        for part in self.company_lookup.split("__"):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def _may_write(self, request, obj) -> bool:
        if request.user.is_superuser or obj is None:
            return True
        company = self.company_of(obj)
        return (
            company is not None
            and human_companies(request.user, writable=True).filter(pk=company.pk).exists()
        )

    def _may_read(self, request, obj) -> bool:
        if request.user.is_superuser or obj is None:
            return True
        company = self.company_of(obj)
        return company is not None and human_companies(request.user).filter(pk=company.pk).exists()

    def has_module_permission(self, request):
        return super().has_module_permission(request) and (
            request.user.is_superuser or human_companies(request.user).exists()
        )

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and self._may_read(request, obj)

    def has_add_permission(self, request, *args):
        return super().has_add_permission(request, *args) and (
            request.user.is_superuser or human_companies(request.user, writable=True).exists()
        )

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._may_write(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._may_write(request, obj)

    def scoped_choices(self, request, model, queryset):
        """``queryset`` of ``model`` limited to what this staff user may pick."""
        if request.user.is_superuser:
            return queryset
        companies = human_companies(request.user, writable=True)
        if model is Company:
            return queryset.filter(pk__in=companies)
        if model is get_user_model():
            return queryset.filter(company_memberships__company__in=companies).distinct()
        names = {f.name for f in model._meta.get_fields()}
        if "company" in names:
            return queryset.filter(company__in=companies)
        if "agent" in names:
            return queryset.filter(agent__company__in=companies)
        return queryset.none()  # a model with no tenant: nothing to offer non-superusers

    def _choices_kwargs(self, db_field, request, kwargs) -> dict:
        model = db_field.remote_field.model
        queryset = kwargs.get("queryset")
        if queryset is None:
            queryset = self.get_field_queryset(None, db_field, request)
        if queryset is None:
            queryset = model._default_manager.all()
        kwargs["queryset"] = self.scoped_choices(request, model, queryset)
        return kwargs

    def get_list_filter(self, request):
        """Relation filters offer only values present in the staff user's own rows.

        Django's ``RelatedFieldListFilter`` lists every row of the related model (every
        company's name); ``RelatedOnlyFieldListFilter`` lists those the scoped queryset uses.
        """
        filters = super().get_list_filter(request)
        if request.user.is_superuser:
            return filters
        return tuple(
            (spec, admin.RelatedOnlyFieldListFilter)
            if isinstance(spec, str) and self._is_relation_path(spec)
            else spec
            for spec in filters
        )

    def _is_relation_path(self, path: str) -> bool:
        model, field = self.model, None
        for part in path.split("__"):
            field = model._meta.get_field(part)
            if field.is_relation:
                model = field.related_model
        return field is not None and field.is_relation

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        kwargs = self._choices_kwargs(db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        kwargs = self._choices_kwargs(db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    # --- writes through services -------------------------------------------------------------

    def principal_for(self, request, obj) -> Principal:
        return admin_principal(request, self.company_of(obj))

    def create_via_service(self, principal: Principal, data: dict) -> models.Model:
        raise PermissionDenied("Objects of this kind are not created in the admin.")

    def update_via_service(self, principal: Principal, obj, changes: dict) -> models.Model:
        raise PermissionDenied("Objects of this kind are not changed in the admin.")

    def delete_via_service(self, principal: Principal, obj) -> None:
        raise PermissionDenied("Objects of this kind are not deleted in the admin.")

    def save_model(self, request, obj, form, change):
        principal = self.principal_for(request, obj)
        if change:
            changes = {
                f: form.cleaned_data[f] for f in form.changed_data if f in self.service_fields
            }
            saved = self.update_via_service(principal, obj, changes)
        else:
            saved = self.create_via_service(principal, form.cleaned_data)
        obj.pk = saved.pk
        obj._state.adding = False

    def save_related(self, request, form, formsets, change):
        # No inline or m2m write bypasses the services: inlines here are read-only.
        for formset in formsets:
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []

    def delete_model(self, request, obj):
        self.delete_via_service(self.principal_for(request, obj), obj)

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.delete_via_service(self.principal_for(request, obj), obj)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except DomainError as exc:
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as exc:
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changelist_view(self, request, extra_context=None):
        try:
            return super().changelist_view(request, extra_context)
        except DomainError as exc:  # a bulk action refused by a service: nothing was applied
            self.message_user(request, exc.detail, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


class ReadOnlyScopedAdmin(CompanyScopedAdmin):
    """Scoped and view-only: append-only ledgers and records only services write."""

    # None: not even delete; a subclass may name actions that call a service
    actions: Sequence[Callable[..., Any] | str] | None = None

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
