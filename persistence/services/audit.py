"""The one way any app records a security-relevant action.

Call :func:`audit_record` inside the transaction of the action it records, so the entry and
the action commit (or roll back) together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.db import router
from django.utils import timezone

from persistence.access import owner_for_create
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry
from synthorg.db.prepared import insert_prepared

if TYPE_CHECKING:
    from persistence.models import Agent, Company
    from persistence.principal import Principal


def audit_record(
    *,
    company: Company,
    action_type: AuditAction | str,
    actor_agent: Agent | None = None,
    actor_user=None,
    principal: Principal | None = None,
    target_type: str = "",
    target_id: str | int | UUID = "",
    verdict: str = AuditEntry.Verdict.ALLOWED,
    risk_level: str = AuditEntry.RiskLevel.LOW,
    details: Mapping[str, Any] | None = None,
) -> AuditEntry:
    """Append one audit entry of the service's own. ``principal`` is a shortcut for the actor
    agent or user. ``action_type`` must be one of :class:`~persistence.audit_actions.
    AuditAction` (an unknown one is a bug: ``ValueError`` before anything is written); what
    an agent reports of its own actions goes through :func:`audit_entry_submit`."""
    return _append(
        company=company,
        action_type=AuditAction(action_type),
        actor_agent=actor_agent,
        actor_user=actor_user,
        principal=principal,
        target_type=target_type,
        target_id=target_id,
        verdict=verdict,
        risk_level=risk_level,
        details=details,
    )


def _append(
    *,
    company: Company,
    action_type: str,
    actor_agent: Agent | None,
    actor_user,
    principal: Principal | None,
    target_type: str,
    target_id: str | int | UUID,
    verdict: str,
    risk_level: str,
    details: Mapping[str, Any] | None,
) -> AuditEntry:
    if principal is not None:
        actor_agent = actor_agent or principal.agent
        actor_user = actor_user or principal.user
    entry = AuditEntry(
        company=company,
        actor_agent=actor_agent,
        actor_user=actor_user,
        action_type=action_type,
        target_type=target_type,
        target_id=str(target_id),
        verdict=verdict,
        risk_level=risk_level,
        details=dict(details or {}),
        created_at=timezone.now(),
    )
    # What ``objects.create`` does, as a prepared statement: most writes record an entry.
    insert_prepared(entry, using=router.db_for_write(AuditEntry))
    return entry


AUDIT_SUBMIT_FIELDS = ("action_type", "target_type", "target_id", "verdict", "risk_level")


def audit_entry_submit(
    *,
    principal: Principal,
    action_type: str,
    target_type: str = "",
    target_id: str = "",
    verdict: str = AuditEntry.Verdict.ALLOWED,
    risk_level: str = AuditEntry.RiskLevel.LOW,
    details: Mapping[str, Any] | None = None,
) -> AuditEntry:
    """An audit entry reported through the API; the actor is always the caller. Its
    ``action_type`` is the agent's own vocabulary (any name the serializer accepts), not one
    of the service's :class:`~persistence.audit_actions.AuditAction`."""
    owner_for_create(principal, "audit_entry", principal.agent)
    return _append(
        company=principal.company,
        actor_agent=None,
        actor_user=None,
        principal=principal,
        action_type=action_type,
        target_type=target_type,
        target_id=target_id,
        verdict=verdict,
        risk_level=risk_level,
        details=details,
    )
