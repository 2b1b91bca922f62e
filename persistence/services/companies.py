"""Writes for companies and their configuration."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Mapping
from typing import Any

import yaml
from django.db import transaction
from django.db.models import F
from django.utils.text import slugify

from persistence.access import (
    CREATE,
    DELETE,
    UPDATE,
    require_membership_change,
    require_write,
)
from persistence.audit_actions import AuditAction
from persistence.models import Company, CompanyMembership
from persistence.services.audit import audit_record
from synthorg.api.input_safety import UnsafeInputError, check_json_value
from synthorg.company_config import CompanyConfig, CompanyConfigError, parse_company_config
from synthorg.errors import ConflictError, InvalidInputError
from synthorg.tenancy import tenant_config_errors

COMPANY_EXISTS = "A company with this name or slug already exists."
INVALID_CONFIG = "The company configuration is invalid: {error}"
CONFIG_NOT_YAML = "The configuration is not valid YAML: {error}"
CONFIG_NOT_MAPPING = "The configuration must be a YAML mapping (memory: / org_memory:)."
SECTION_MISSPELT = (
    "Top-level section {key!r} is not one this service reads; did you mean {section!r}? "
    "(Sections other than memory and org_memory are ignored, so a misspelt one would be "
    "dropped with everything in it.)"
)
CONFIG_SECTIONS = ("memory", "org_memory")
CONFIG_REVISION_CONFLICT = (
    "The configuration was changed by someone else (revision {current}, you edited "
    "revision {expected}); reload it and apply your change again."
)


def company_config_from_yaml(
    text: str, *, company_id: int | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Parse and validate a company config document (YAML; empty means all defaults).

    Returns the ``memory``/``org_memory`` sections and the names of other top-level
    sections, which are ignored (a whole SynthOrg company file may carry more: the caller
    tells the user which); a top-level key that looks like a misspelt ``memory`` /
    ``org_memory`` is refused (``unknown_section``) rather than dropped. Raises
    ``InvalidInputError`` (code ``invalid_company_config``) naming the field. The one parser
    shared by the admin form and ``manage.py load_company_config``; it never writes. With
    the company's id the server's rules (granted secrets, outbound URLs) are checked too.
    """
    try:
        data = yaml.safe_load(text) if text and text.strip() else {}
    except yaml.YAMLError as exc:
        raise InvalidInputError(
            CONFIG_NOT_YAML.format(error=exc),
            code="invalid_company_config",
            errors=[{"field": "", "message": CONFIG_NOT_YAML.format(error=exc), "code": "yaml"}],
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidInputError(
            CONFIG_NOT_MAPPING,
            code="invalid_company_config",
            errors=[{"field": "", "message": CONFIG_NOT_MAPPING, "code": "type"}],
        )
    ignored = sorted(str(k) for k in data if k not in CONFIG_SECTIONS)
    misspelt = [
        {
            "field": key,
            "message": SECTION_MISSPELT.format(key=key, section=close[0]),
            "code": "unknown_section",
        }
        for key in ignored
        if (close := difflib.get_close_matches(key, CONFIG_SECTIONS, n=1, cutoff=0.75))
    ]
    if misspelt:
        raise InvalidInputError(
            misspelt[0]["message"], code="invalid_company_config", errors=misspelt
        )
    sections = {k: data[k] for k in CONFIG_SECTIONS if k in data}
    validate_company_config(sections, company_id=company_id)
    return sections, ignored


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def config_changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Dotted paths whose value differs between two normalised config dumps."""
    old, new = _flatten(before), _flatten(after)
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def config_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{"field", "old", "new"}]`` for each dotted path that differs (absent: ``None``)."""
    old, new = _flatten(before), _flatten(after)
    return [
        {"field": key, "old": old.get(key), "new": new.get(key)}
        for key in config_changed_fields(before, after)
    ]


def validate_company_config(
    data: Mapping[str, Any] | None, *, company_id: int | None = None
) -> CompanyConfig:
    """Parse ``data`` or raise ``InvalidInputError`` whose errors name each bad field.

    With ``company_id``, also what the server refuses for that company
    (:func:`synthorg.tenancy.tenant_config_errors`: ungranted secrets, refused URLs).
    """
    try:
        check_json_value(dict(data) if isinstance(data, Mapping) else None)
    except UnsafeInputError as exc:
        error = {"field": exc.field or "", "message": exc.message, "code": exc.code}
        raise InvalidInputError(
            INVALID_CONFIG.format(error=f"{error['field']}: {exc.message}"),
            code="invalid_company_config",
            errors=[error],
        ) from None
    try:
        parsed = parse_company_config(data)
    except CompanyConfigError as exc:
        raise InvalidInputError(
            INVALID_CONFIG.format(error=exc), code="invalid_company_config", errors=exc.errors
        ) from exc
    errors = tenant_config_errors(parsed, company_id=company_id) if company_id else []
    if errors:
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        raise InvalidInputError(
            INVALID_CONFIG.format(error=summary), code="invalid_company_config", errors=errors
        )
    return parsed


@transaction.atomic
def company_create(
    *, name: str, slug: str | None = None, config: Mapping[str, Any] | None = None
) -> Company:
    slug = slug or slugify(name)
    parsed = validate_company_config(config)
    if Company.objects.filter(name=name).exists() or Company.objects.filter(slug=slug).exists():
        raise ConflictError(COMPANY_EXISTS, code="company_exists")
    company = Company.objects.create(name=name, slug=slug, config=parsed.model_dump(mode="json"))
    # The server's rules name the company by id, which exists from here on (a refusal rolls
    # the company back with this transaction).
    validate_company_config(config, company_id=company.pk)
    for hook in _company_created_hooks:
        hook(company)  # same transaction: e.g. its maintenance schedule exists with it
    return company


@transaction.atomic
def company_config_set(
    *,
    company: Company,
    data: Mapping[str, Any] | None,
    principal=None,
    actor_user=None,
    via="",
    expected_revision: int | None = None,
) -> CompanyConfig:
    """Validate and store a company's whole config; bumps ``config_revision``.

    ``expected_revision`` (the revision the editor loaded) turns a concurrent edit into a
    ``ConflictError`` (``config_revision_conflict``) instead of a silent overwrite. The
    registered config appliers (:func:`register_config_applier`) run first, in this
    transaction. Audited (``company.config_changed``) with the dotted paths that changed
    and each one's old and new value (``changes``).
    """
    if principal is not None:
        require_write(principal, "company", UPDATE)
    parsed = validate_company_config(data, company_id=company.pk)
    before, revision = (
        Company.objects.select_for_update()
        .values_list("config", "config_revision")
        .get(pk=company.pk)
    )
    if expected_revision is not None and expected_revision != revision:
        raise ConflictError(
            CONFIG_REVISION_CONFLICT.format(current=revision, expected=expected_revision),
            code="config_revision_conflict",
            extra={"current_revision": revision},
        )
    previous = None
    with contextlib.suppress(CompanyConfigError):
        previous = parse_company_config(before)
    user = actor_user if actor_user is not None else getattr(principal, "user", None)
    for applier in _config_appliers:
        parsed = applier(
            company=company, config=parsed, previous=previous, principal=principal, user=user
        )
    dumped = parsed.model_dump(mode="json")
    # Compare normalised dumps, so defaults spelled out or left out are no change.
    if previous is not None:
        before = previous.model_dump(mode="json")
    Company.objects.filter(pk=company.pk).update(
        config=dumped, config_revision=F("config_revision") + 1
    )
    company.refresh_from_db(fields=["config", "config_revision", "updated_at"])
    changes = config_diff(before or {}, dumped)
    audit_record(
        company=company,
        principal=principal,
        actor_user=actor_user,
        action_type=AuditAction.COMPANY_CONFIG_CHANGED,
        target_type="company",
        target_id=company.pk,
        risk_level="medium",
        details={
            "revision": company.config_revision,
            "changed": [change["field"] for change in changes],
            "changes": changes,
            "via": via,
        },
    )
    for hook in _config_change_hooks:
        transaction.on_commit(lambda hook=hook: hook(company))
    return parsed


@transaction.atomic
def company_rename(*, company: Company, name: str, slug: str, principal=None) -> Company:
    if principal is not None:
        require_write(principal, "company", UPDATE)
    taken = Company.objects.exclude(pk=company.pk)
    if taken.filter(name=name).exists() or taken.filter(slug=slug).exists():
        raise ConflictError(COMPANY_EXISTS, code="company_exists")
    company = Company.objects.select_for_update().get(pk=company.pk)
    before = {"name": company.name, "slug": company.slug}
    if before == {"name": name, "slug": slug}:
        return company
    company.name, company.slug = name, slug
    company.full_clean(validate_unique=False)
    company.save(update_fields=["name", "slug", "updated_at"])
    audit_record(
        company=company,
        principal=principal,
        action_type=AuditAction.COMPANY_RENAMED,
        target_type="company",
        target_id=company.pk,
        risk_level="medium",
        details={"before": before, "after": {"name": name, "slug": slug}},
    )
    return company


@transaction.atomic
def membership_set(*, company: Company, user, role: str, principal=None) -> CompanyMembership:
    if role not in CompanyMembership.Role.values:
        raise InvalidInputError(f"Unknown role {role!r}.", code="invalid_role")
    existing = (
        CompanyMembership.objects.select_for_update().filter(company=company, user=user).first()
    )
    if principal is not None:
        require_membership_change(
            principal,
            action=UPDATE if existing else CREATE,
            current=existing.role if existing else None,
            new=role,
        )
    if existing is not None and existing.role == role:
        return existing
    membership, _ = CompanyMembership.objects.update_or_create(
        company=company, user=user, defaults={"role": role}
    )
    audit_record(
        company=company,
        principal=principal,
        action_type=AuditAction.MEMBERSHIP_CHANGED,
        target_type="user",
        target_id=user.pk,
        risk_level="medium",
        details={"role": role, "previous": existing.role if existing else None},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: CompanyMembership, principal=None) -> None:
    membership = CompanyMembership.objects.select_for_update().get(pk=membership.pk)
    if principal is not None:
        require_membership_change(principal, action=DELETE, current=membership.role, new=None)
    audit_record(
        company=membership.company,
        principal=principal,
        action_type=AuditAction.MEMBERSHIP_REMOVED,
        target_type="user",
        target_id=membership.user_id,
        risk_level="medium",
        details={"previous": membership.role},
    )
    membership.delete()


_config_change_hooks: list = []


def on_company_config_change(hook) -> None:
    """Register ``hook(company)`` to run after a config change commits (e.g. schedules)."""
    if hook not in _config_change_hooks:
        _config_change_hooks.append(hook)


_company_created_hooks: list = []

_config_appliers: list = []


def register_config_applier(applier) -> None:
    """Register ``applier(company=, config=, previous=, principal=, user=) -> CompanyConfig``.

    Called by :func:`company_config_set` inside its transaction, before the config is
    stored: an app applies the part of the config it owns (org memory: ``core_policies``
    become versioned facts) and returns the config to store. ``previous`` is the stored
    config (``None`` if it no longer parses); ``principal`` / ``user`` the actor, if any.
    Raising a ``DomainError`` refuses the whole save.
    """
    if applier not in _config_appliers:
        _config_appliers.append(applier)


_config_presenters: list = []


def register_config_presenter(presenter) -> None:
    """Register ``presenter(company=, data=) -> dict``: what an editor of the config shows.

    An app whose applier consumes part of the config fills that part back in from its own
    state (org memory: the live core policies), so a save of what was shown changes nothing.
    """
    if presenter not in _config_presenters:
        _config_presenters.append(presenter)


def company_config_for_editing(company: Company) -> dict[str, Any]:
    """The company's stored config (normalised) as the YAML editor and the form show it."""
    data: dict[str, Any] = dict(company.config or {})
    with contextlib.suppress(CompanyConfigError):
        data = parse_company_config(data).model_dump(mode="json")
    for presenter in _config_presenters:
        data = presenter(company=company, data=data)
    return data


def on_company_created(hook) -> None:
    """Register ``hook(company)`` to run inside ``company_create``'s transaction."""
    if hook not in _company_created_hooks:
        _company_created_hooks.append(hook)
