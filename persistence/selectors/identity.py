"""Reads for authentication: API keys and memberships."""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from persistence.models import AgentApiKey, Company, CompanyMembership
from persistence.principal import Principal
from persistence.selectors.verified_keys import ROW_VERSIONS, row_versions_expression, verified_keys
from synthorg.db.replicas import unfenced

API_KEY_PATTERN = re.compile(
    r"^sok_(?P<prefix>[A-Za-z0-9]{8,16})_(?P<secret>[A-Za-z0-9_-]{20,128})$"
)


@dataclass(frozen=True)
class KeyProblem:
    code: str
    message: str


@dataclass(frozen=True)
class KeyLookup:
    key: AgentApiKey | None = None
    error: KeyProblem | None = None


MALFORMED_KEY = KeyProblem("malformed_credentials", "The API key is malformed.")
INVALID_KEY = KeyProblem("invalid_credentials", "The API key is not valid.")
REVOKED_KEY = KeyProblem("credentials_revoked", "The API key has been revoked.")
EXPIRED_KEY = KeyProblem("credentials_expired", "The API key has expired.")
INACTIVE_AGENT = KeyProblem("agent_inactive", "The agent this key belongs to is deactivated.")


def hash_api_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def agent_for_api_key(raw_key: str) -> KeyLookup:
    """Resolve a raw key to its usable ``AgentApiKey`` (agent and company joined) or an error.

    A key verified before comes from :data:`~persistence.selectors.verified_keys.verified_keys`
    when its key, agent and company rows are unchanged since (one indexed query instead of
    the ORM join); any change to them, by any process, sends it through the full lookup.
    """
    match = API_KEY_PATTERN.match(raw_key)
    if match is None:
        return KeyLookup(error=MALFORMED_KEY)
    digest = hash_api_key(raw_key)
    key = verified_keys.get(digest)
    if key is None:
        key = (
            AgentApiKey.objects.select_related("agent__company")
            .annotate(**{ROW_VERSIONS: row_versions_expression()})
            .filter(prefix=match["prefix"])
            .first()
        )
        if key is None or not hmac.compare_digest(key.key_hash, digest):
            return KeyLookup(error=INVALID_KEY)
        versions = key.__dict__.pop(ROW_VERSIONS)
        if key.revoked_at is None and key.agent.is_active:
            verified_keys.put(digest, key, versions)
    now = timezone.now()
    if key.revoked_at is not None:
        return KeyLookup(error=REVOKED_KEY)
    if key.expires_at is not None and key.expires_at <= now:
        return KeyLookup(error=EXPIRED_KEY)
    if not key.agent.is_active:
        return KeyLookup(error=INACTIVE_AGENT)
    if _touch_last_used(key, now):
        verified_keys.discard(digest)  # a new row version: the next use re-reads it
    return KeyLookup(key=key)


def _touch_last_used(key: AgentApiKey, now) -> bool:
    resolution = timedelta(seconds=settings.SYNTHORG_KEY_LAST_USED_RESOLUTION)
    if key.last_used_at is None or now - key.last_used_at >= resolution:
        with unfenced():  # bookkeeping: the agent's reads need not wait for it on a replica
            AgentApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
        return True
    return False


def human_companies(user, *, writable: bool = False):
    """The companies ``user`` may see (``writable``: may write in) — all of them for a
    superuser, otherwise those they hold a membership in (a viewer's only for reading)."""
    if user.is_superuser:
        return Company.objects.all()
    memberships = CompanyMembership.objects.filter(user=user)
    if writable:
        memberships = memberships.exclude(role=CompanyMembership.Role.VIEWER)
    return Company.objects.filter(pk__in=memberships.values("company_id"))


def human_principal(
    user, *, company: Company | None = None, company_slug: str | None = None
) -> Principal | None:
    """The one rule for "which company does this human act in, with which role".

    * A company named (``company`` or ``company_slug``): the user's membership there gives
      the role; a superuser without one acts as ``owner`` (superusers administer every
      company). Anyone else gets ``None`` — a company that is not theirs is never revealed.
    * No company named: the user's only membership; ``None`` if they have none or several
      (the caller must say which one, e.g. with ``X-Company``).

    Used by the API's session authentication, the admin and the dashboards alike.
    """
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    memberships = CompanyMembership.objects.select_related("company").filter(user=user)
    if company is None and not company_slug:
        found = list(memberships[:2])
        if len(found) != 1:
            return None
        return Principal.for_human(user, found[0].company, found[0].role)
    if company is None:
        if "\x00" in company_slug:  # PostgreSQL text cannot hold NUL: no such company
            return None
        company = Company.objects.filter(slug=company_slug).first()
        if company is None:
            return None
    membership = memberships.filter(company=company).first()
    if membership is not None:
        return Principal.for_human(user, membership.company, membership.role)
    if user.is_superuser:
        return Principal.for_human(user, company, CompanyMembership.Role.OWNER)
    return None
