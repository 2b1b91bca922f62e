"""Writes for agents and their API keys."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from persistence.models import Agent, AgentApiKey, Company
from persistence.selectors.identity import hash_api_key
from persistence.services.audit import audit_record
from synthorg.errors import ConflictError, InvalidInputError

AGENT_NAME_TAKEN = "An agent named {name!r} already exists in this company."
KEY_ALREADY_REVOKED = "This API key is already revoked."
EXPIRY_IN_PAST = "expires_at must be in the future."


@dataclass(frozen=True)
class IssuedKey:
    key: AgentApiKey
    raw_key: str  # shown to the caller once; never stored


@transaction.atomic
def agent_create(*, company: Company, name: str, **fields) -> Agent:
    if Agent.objects.filter(company=company, name=name).exists():
        raise ConflictError(AGENT_NAME_TAKEN.format(name=name), code="agent_name_taken")
    agent = Agent(company=company, name=name, **fields)
    agent.full_clean()
    agent.save()
    return agent


@transaction.atomic
def api_key_issue(
    *, agent: Agent, name: str = "", expires_at: datetime | None = None, actor_user=None
) -> IssuedKey:
    """Create a key for ``agent``; the raw key is returned once and only its digest kept."""
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
        action_type="api_key.issued",
        target_type="agent_api_key",
        target_id=key.pk,
        risk_level="medium",
        details={"agent_id": agent.pk, "prefix": prefix, "expires_at": _iso(expires_at)},
    )
    return IssuedKey(key=key, raw_key=raw_key)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@transaction.atomic
def api_key_revoke(*, key: AgentApiKey, actor_user=None) -> AgentApiKey:
    key = AgentApiKey.objects.select_for_update().get(pk=key.pk)
    if key.revoked_at is not None:
        raise ConflictError(KEY_ALREADY_REVOKED, code="key_already_revoked")
    key.revoked_at = timezone.now()
    key.save(update_fields=["revoked_at"])
    audit_record(
        company=key.agent.company,
        actor_user=actor_user,
        action_type="api_key.revoked",
        target_type="agent_api_key",
        target_id=key.pk,
        risk_level="medium",
        details={"agent_id": key.agent_id, "prefix": key.prefix},
    )
    return key
