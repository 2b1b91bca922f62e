"""Writes for company settings (namespace + key). Changes are audited."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.budget import SETTING_SCHEMAS
from persistence.models import Setting
from persistence.principal import Principal
from persistence.services.audit import audit_record
from synthorg.errors import InvalidInputError

INVALID_SETTING = "Invalid value for setting {namespace}.{key}."


def validate_setting_value(namespace: str, key: str, value: Any) -> Any:
    """Validate values of known settings (e.g. the budget) and return their normal form."""
    schema = SETTING_SCHEMAS.get((namespace, key))
    if schema is None:
        return value
    try:
        return schema.model_validate(value).model_dump(mode="json")
    except ValidationError as exc:
        errors = [
            {
                "field": "value." + ".".join(str(p) for p in err["loc"]) if err["loc"] else "value",
                "message": err["msg"],
                "code": err["type"],
            }
            for err in exc.errors()
        ]
        raise InvalidInputError(
            INVALID_SETTING.format(namespace=namespace, key=key),
            code="invalid_setting",
            errors=errors,
        ) from exc


@transaction.atomic
def setting_set(*, principal: Principal, namespace: str, key: str, value: Any) -> Setting:
    """Create or replace the company's setting ``namespace.key``."""
    value = validate_setting_value(namespace, key, value)
    now = timezone.now()
    setting = (
        Setting.objects.select_for_update()
        .filter(company=principal.company, namespace=namespace, key=key)
        .first()
    )
    previous = None
    if setting is None:
        require_write(principal, "setting", CREATE)
        setting = Setting(company=principal.company, namespace=namespace, key=key, created_at=now)
    else:
        require_write(principal, "setting", UPDATE)
        previous = setting.value
    setting.value = value
    setting.updated_at = now
    setting.updated_by = principal.user
    setting.full_clean(validate_unique=False)
    setting.save()
    audit_record(
        company=principal.company,
        principal=principal,
        action_type=AuditAction.SETTING_CHANGED,
        target_type="setting",
        target_id=f"{namespace}.{key}",
        risk_level="medium",
        details={"previous": previous, "value": value},
    )
    return setting


@transaction.atomic
def setting_delete(*, principal: Principal, setting: Setting) -> None:
    require_write(principal, "setting", DELETE)
    audit_record(
        company=principal.company,
        principal=principal,
        action_type=AuditAction.SETTING_DELETED,
        target_type="setting",
        target_id=f"{setting.namespace}.{setting.key}",
        risk_level="medium",
        details={"previous": setting.value},
    )
    setting.delete()
