"""Writes for companies and their configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils.text import slugify

from persistence.models import Company, CompanyMembership
from synthorg.company_config import CompanyConfig, CompanyConfigError, parse_company_config
from synthorg.errors import ConflictError, InvalidInputError

COMPANY_EXISTS = "A company with this name or slug already exists."
INVALID_CONFIG = "The company configuration is invalid: {error}"


def validate_company_config(data: Mapping[str, Any] | None) -> CompanyConfig:
    """Parse ``data`` or raise ``InvalidInputError`` whose errors name each bad field."""
    try:
        return parse_company_config(data)
    except CompanyConfigError as exc:
        raise InvalidInputError(
            INVALID_CONFIG.format(error=exc), code="invalid_company_config", errors=exc.errors
        ) from exc


@transaction.atomic
def company_create(
    *, name: str, slug: str | None = None, config: Mapping[str, Any] | None = None
) -> Company:
    slug = slug or slugify(name)
    parsed = validate_company_config(config)
    if Company.objects.filter(name=name).exists() or Company.objects.filter(slug=slug).exists():
        raise ConflictError(COMPANY_EXISTS, code="company_exists")
    company = Company.objects.create(name=name, slug=slug, config=parsed.model_dump(mode="json"))
    for hook in _company_created_hooks:
        hook(company)  # same transaction: e.g. its maintenance schedule exists with it
    return company


@transaction.atomic
def company_config_set(*, company: Company, data: Mapping[str, Any] | None) -> CompanyConfig:
    """Validate and store a company's whole config; bumps ``config_revision``."""
    parsed = validate_company_config(data)
    Company.objects.filter(pk=company.pk).update(
        config=parsed.model_dump(mode="json"), config_revision=F("config_revision") + 1
    )
    company.refresh_from_db(fields=["config", "config_revision", "updated_at"])
    for hook in _config_change_hooks:
        transaction.on_commit(lambda hook=hook: hook(company))
    return parsed


@transaction.atomic
def membership_set(*, company: Company, user, role: str) -> CompanyMembership:
    if role not in CompanyMembership.Role.values:
        raise InvalidInputError(f"Unknown role {role!r}.", code="invalid_role")
    membership, _ = CompanyMembership.objects.update_or_create(
        company=company, user=user, defaults={"role": role}
    )
    return membership


_config_change_hooks: list = []


def on_company_config_change(hook) -> None:
    """Register ``hook(company)`` to run after a config change commits (e.g. schedules)."""
    if hook not in _config_change_hooks:
        _config_change_hooks.append(hook)


_company_created_hooks: list = []


def on_company_created(hook) -> None:
    """Register ``hook(company)`` to run inside ``company_create``'s transaction."""
    if hook not in _company_created_hooks:
        _company_created_hooks.append(hook)
