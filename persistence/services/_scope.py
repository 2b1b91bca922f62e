"""Guards shared by the operational-data services."""

from __future__ import annotations

from synthorg.errors import InvalidInputError

CROSS_COMPANY_REFERENCE = "{field} must belong to the same company."


def require_same_company(company, **related) -> None:
    """Reject references to objects of another company (DB FKs cannot express the tenant)."""
    for field, obj in related.items():
        if obj is not None and obj.company_id != company.pk:
            raise InvalidInputError(
                CROSS_COMPANY_REFERENCE.format(field=field),
                code="cross_company_reference",
                errors=[{"field": field, "message": "Not found.", "code": "does_not_exist"}],
            )


def apply_changes(instance, changes: dict, allowed: frozenset[str]) -> list[str]:
    """Set the allowed ``changes`` on ``instance``; return the changed field names."""
    unknown = set(changes) - allowed
    if unknown:
        raise InvalidInputError(
            f"These fields cannot be changed: {', '.join(sorted(unknown))}.",
            code="field_not_writable",
        )
    for name, value in changes.items():
        setattr(instance, name, value)
    return list(changes)
