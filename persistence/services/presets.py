"""Writes for custom personality presets (people manage them; agents read them)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.models import PersonalityPreset
from persistence.principal import Principal
from persistence.services._scope import apply_changes
from synthorg.errors import ConflictError

PRESET_NAME_TAKEN = "A personality preset named {name!r} already exists in this company."
PRESET_FIELDS = frozenset({"name", "description", "traits"})


def _ensure_name_free(company, name: str, exclude_pk=None) -> None:
    taken = PersonalityPreset.objects.filter(company=company, name=name)
    if exclude_pk is not None:
        taken = taken.exclude(pk=exclude_pk)
    if taken.exists():
        raise ConflictError(PRESET_NAME_TAKEN.format(name=name), code="preset_name_taken")


@transaction.atomic
def preset_create(
    *, principal: Principal, name: str, description: str = "", traits: dict | None = None
) -> PersonalityPreset:
    require_write(principal, "personality_preset", CREATE)
    _ensure_name_free(principal.company, name)
    now = timezone.now()
    preset = PersonalityPreset(
        company=principal.company,
        name=name,
        description=description,
        traits=dict(traits or {}),
        created_at=now,
        updated_at=now,
    )
    preset.full_clean()
    preset.save()
    return preset


@transaction.atomic
def preset_update(
    *, principal: Principal, preset: PersonalityPreset, **changes
) -> PersonalityPreset:
    require_write(principal, "personality_preset", UPDATE)
    if "name" in changes:
        _ensure_name_free(principal.company, changes["name"], exclude_pk=preset.pk)
    fields = apply_changes(preset, changes, PRESET_FIELDS)
    preset.updated_at = timezone.now()
    preset.full_clean(validate_unique=False)
    preset.save(update_fields=[*fields, "updated_at"])
    return preset


@transaction.atomic
def preset_delete(*, principal: Principal, preset: PersonalityPreset) -> None:
    require_write(principal, "personality_preset", DELETE)
    preset.delete()
