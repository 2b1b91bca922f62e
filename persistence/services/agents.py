"""Writes for agents and their API keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from persistence.access import CREATE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import Agent, AgentApiKey, Company
from persistence.selectors.config import company_config
from persistence.selectors.identity import hash_api_key
from persistence.services._scope import apply_changes, require_same_company
from persistence.services.audit import audit_record
from synthorg.company_config.memory import AgentRetentionOverrides
from synthorg.errors import ConflictError, InvalidInputError

AGENT_NAME_TAKEN = "An agent named {name!r} already exists in this company."
KEY_ALREADY_REVOKED = "This API key is already revoked."
EXPIRY_IN_PAST = "expires_at must be in the future."
INVALID_RETENTION_OVERRIDES = "retention_overrides: {problem}"


@dataclass(frozen=True)
class IssuedKey:
    key: AgentApiKey
    raw_key: str  # shown to the caller once; never stored


# The fields an agent is edited by, in form order (the admin form shows them so).
AGENT_EDITABLE = (
    "name",
    "role",
    "department",
    "seniority",
    "autonomy_level",
    "memory_level",
    "retention_overrides",
    "is_active",
)
AGENT_FIELDS = frozenset(AGENT_EDITABLE)
# Changes to these decide what an agent may write (org memory rules, levels): medium risk.
AGENT_PRIVILEGE_FIELDS = ("seniority", "autonomy_level", "memory_level", "is_active")


def retention_overrides_checked(value) -> dict:
    """``value`` as stored on ``Agent.retention_overrides``: blank (``None``, ``{}``, ``""``)
    means no overrides (``{}``); anything else must validate as
    :class:`~synthorg.company_config.memory.AgentRetentionOverrides`."""
    if value in (None, "", {}):
        return {}
    try:
        AgentRetentionOverrides.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidInputError(
            INVALID_RETENTION_OVERRIDES.format(problem=problems),
            code="invalid_retention_overrides",
        ) from exc
    return value


@transaction.atomic
def agent_create(
    *,
    company: Company,
    name: str,
    memory_level: str | None = None,
    principal=None,
    **fields,
) -> Agent:
    """Create an agent. Without ``memory_level`` it gets the company's ``memory.level``."""
    if principal is not None:
        require_write(principal, "agent", CREATE)
    if Agent.objects.filter(company=company, name=name).exists():
        raise ConflictError(AGENT_NAME_TAKEN.format(name=name), code="agent_name_taken")
    if memory_level is None:
        memory_level = company_config(company).memory.level.value
    if "retention_overrides" in fields:
        fields["retention_overrides"] = retention_overrides_checked(fields["retention_overrides"])
    agent = Agent(company=company, name=name, memory_level=memory_level, **fields)
    agent.full_clean()
    agent.save()
    audit_record(
        company=company,
        principal=principal,
        action_type=AuditAction.AGENT_CREATED,
        target_type="agent",
        target_id=agent.pk,
        risk_level="medium",
        details={f: getattr(agent, f) for f in ("name", *AGENT_PRIVILEGE_FIELDS)},
    )
    return agent


@transaction.atomic
def agent_update(*, agent: Agent, principal=None, **changes) -> Agent:
    """Change an agent; every changed field is audited with its old and new value."""
    if principal is not None:
        require_write(principal, "agent", UPDATE)
        require_same_company(principal.company, agent=agent)
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    if "name" in changes and (
        Agent.objects.filter(company=agent.company_id, name=changes["name"])
        .exclude(pk=agent.pk)
        .exists()
    ):
        raise ConflictError(AGENT_NAME_TAKEN.format(name=changes["name"]), code="agent_name_taken")
    if "retention_overrides" in changes:
        changes["retention_overrides"] = retention_overrides_checked(changes["retention_overrides"])
    before = {f: getattr(agent, f) for f in changes if f in AGENT_FIELDS}
    fields = apply_changes(agent, changes, AGENT_FIELDS)
    changed = {f: [before[f], getattr(agent, f)] for f in fields if before[f] != getattr(agent, f)}
    if not changed:
        return agent
    agent.full_clean(validate_unique=False)
    agent.save(update_fields=[*changed, "updated_at"])
    audit_record(
        company=agent.company,
        principal=principal,
        action_type=AuditAction.AGENT_UPDATED,
        target_type="agent",
        target_id=agent.pk,
        risk_level="medium" if set(changed) & set(AGENT_PRIVILEGE_FIELDS) else "low",
        details={"changes": changed},
    )
    return agent


@transaction.atomic
def api_key_issue(
    *,
    agent: Agent,
    name: str = "",
    expires_at: datetime | None = None,
    actor_user=None,
    principal=None,
) -> IssuedKey:
    """Create a key for ``agent``; the raw key is returned once and only its digest kept."""
    if principal is not None:
        require_write(principal, "agent_api_key", CREATE)
        require_same_company(principal.company, agent=agent)
        actor_user = actor_user or principal.user
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInputError(EXPIRY_IN_PAST, code="invalid_expiry")
    prefix = secrets.token_hex(6)
    raw_key = f"sok_{prefix}_{secrets.token_urlsafe(32)}"
    key = AgentApiKey.objects.create(
        agent=agent, name=name, prefix=prefix, key_hash=hash_api_key(raw_key), expires_at=expires_at
    )
    audit_record(
        company=agent.company,
        actor_user=actor_user,
        action_type=AuditAction.API_KEY_ISSUED,
        target_type="agent_api_key",
        target_id=key.pk,
        risk_level="medium",
        details={"agent_id": agent.pk, "prefix": prefix, "expires_at": _iso(expires_at)},
    )
    return IssuedKey(key=key, raw_key=raw_key)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@transaction.atomic
def api_key_revoke(*, key: AgentApiKey, actor_user=None, principal=None) -> AgentApiKey:
    if principal is not None:
        require_write(principal, "agent_api_key", UPDATE)
        require_same_company(principal.company, agent=key.agent)
        actor_user = actor_user or principal.user
    key = AgentApiKey.objects.select_for_update().get(pk=key.pk)
    if key.revoked_at is not None:
        raise ConflictError(KEY_ALREADY_REVOKED, code="key_already_revoked")
    key.revoked_at = timezone.now()
    key.save(update_fields=["revoked_at"])
    audit_record(
        company=key.agent.company,
        actor_user=actor_user,
        action_type=AuditAction.API_KEY_REVOKED,
        target_type="agent_api_key",
        target_id=key.pk,
        risk_level="medium",
        details={"agent_id": key.agent_id, "prefix": key.prefix},
    )
    return key
