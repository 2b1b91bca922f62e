"""The company configuration page: a form generated from the config's JSON schema.

Admins and owners of the company edit it; other roles get a 403 page (the configuration
holds the company's embedder endpoints and secrets' names), and the page only ever shows the
company the user acts in. Saving is :func:`company_config_set` with the revision the editor
loaded: a stale one is a 409 shown on the page with the submitted values kept; an invalid
value is a 400 with the message beside its field. The raw YAML stays in the admin.
"""

from __future__ import annotations

import contextlib

from django.contrib import messages
from django.shortcuts import redirect, render

from persistence.console.access import ConsoleUser, console_view
from persistence.console.config_form import (
    CompanyConfigForm,
    changed_from_default,
    config_from_form,
    error_map,
    form_initial,
)
from persistence.models import Company
from persistence.services.companies import company_config_for_editing, company_config_set
from synthorg.company_config import CompanyConfigError, parse_company_config
from synthorg.errors import ConflictError, DomainError

ADMINS_ONLY = "Only the company's admins and owners change its configuration."


def _render(request, form, *, status=200, error=None, error_code=None, changed=None):
    editing = company_config_for_editing(Company.objects.get(pk=request.console.company.pk))
    return render(
        request,
        "console/company/config.html",
        {
            "section": "config",
            "form": form,
            "error": error,
            "error_code": error_code,
            "field_errors": changed or [],
            "changed": changed_from_default(editing),
        },
        status=status,
    )


def _stored(company: Company) -> dict:
    with contextlib.suppress(CompanyConfigError):
        return parse_company_config(company.config or {}).model_dump(mode="json")
    return dict(company.config or {})


@console_view
def company_config_view(request, user: ConsoleUser):
    if not user.can_administer:
        return render(
            request,
            "console/company/forbidden.html",
            {"section": "config", "message": ADMINS_ONLY},
            status=403,
        )
    company = Company.objects.get(pk=user.company.pk)
    if request.method != "POST":
        form = CompanyConfigForm(
            initial={
                "config": form_initial(company_config_for_editing(company)),
                "expected_revision": company.config_revision,
            }
        )
        return _render(request, form)
    form = CompanyConfigForm(request.POST)
    if not form.is_valid():
        return _render(request, form, status=400, error="The form could not be read.")
    data = config_from_form(form.cleaned_data["config"], stored=_stored(company))
    try:
        company_config_set(
            company=company,
            data=data,
            principal=user.principal,
            via="console",
            expected_revision=form.cleaned_data["expected_revision"],
        )
    except ConflictError as exc:
        return _render(request, form, status=409, error=exc.detail, error_code=exc.code)
    except DomainError as exc:
        bound = CompanyConfigForm(request.POST, errors_by_field=error_map(exc.errors))
        bound.is_valid()
        return _render(
            request,
            bound,
            status=exc.status,
            error=exc.detail,
            error_code=exc.code,
            changed=exc.errors,
        )
    messages.success(request, f"Configuration saved (revision {company.config_revision}).")
    return redirect("console:company-config")
