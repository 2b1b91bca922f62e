"""Erasing an agent's content on request (the right to be forgotten), in one audited step.

Everything an agent stored lives in tables registered in
:mod:`persistence.content_registry`; :func:`agent_erase` deletes the agent's rows of every
erasable kind (memories and their embeddings, archive, shared knowledge, conversation data —
whatever the apps registered), revokes its API keys and deactivates it, all in one
transaction with one audit entry that carries counts, never content.

Append-only ledgers (audit trail, cost records, the org-fact log) are not touched: they are
kept free of memory content instead (audit details carry ids, categories and counts). A
registered kind whose table is append-only is reported as retained, never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from persistence.access import DELETE, require_write
from persistence.audit_actions import AuditAction
from persistence.content_registry import content_kinds, table_is_append_only
from persistence.models import Agent, AgentApiKey, Company
from persistence.services.audit import audit_record
from synthorg.subjects import require_subject, subject_digest

REASON_MAX_CHARS = 500


@dataclass(frozen=True)
class ErasureReport:
    agent_id: int
    counts: dict[str, int]
    keys_revoked: int
    retained: tuple[str, ...]  # append-only kinds, kept by design (they hold no content)


@transaction.atomic
def agent_erase(*, agent: Agent, principal=None, reason: str = "") -> ErasureReport:
    """Delete all of ``agent``'s content, revoke its keys and deactivate it (idempotent)."""
    if principal is not None:
        require_write(principal, "agent_content", DELETE)
    agent = Agent.objects.select_for_update().select_related("company").get(pk=agent.pk)
    counts: dict[str, int] = {}
    retained: list[str] = []
    for kind in content_kinds():
        if kind.erase is None or table_is_append_only(kind.table):
            retained.append(kind.label)
            continue
        counts[kind.label] = kind.erase(agent)
    now = timezone.now()
    keys_revoked = AgentApiKey.objects.filter(agent=agent, revoked_at__isnull=True).update(
        revoked_at=now
    )
    if agent.is_active:
        agent.is_active = False
        agent.save(update_fields=["is_active", "updated_at"])
    audit_record(
        company=agent.company,
        principal=principal,
        action_type=AuditAction.AGENT_ERASED,
        target_type="agent",
        target_id=agent.pk,
        risk_level="high",
        details={
            "counts": counts,
            "keys_revoked": keys_revoked,
            "retained": retained,
            "reason": reason[:REASON_MAX_CHARS],
        },
    )
    return ErasureReport(
        agent_id=agent.pk, counts=counts, keys_revoked=keys_revoked, retained=tuple(retained)
    )


@dataclass(frozen=True)
class SubjectErasureReceipt:
    """What erasing one end user deleted: rows per kind (cascades counted under their own
    kind), and the kinds kept by design (append-only records that never name the subject)."""

    subject: str
    #: ``company`` (every agent's rows) or ``agent`` (one agent's own, an agent key's erasure)
    scope: str
    agent_id: int | None
    counts: dict[str, int]
    retained: tuple[str, ...]
    #: the audit entry's target id: a keyed digest of the subject, never the subject itself
    subject_digest: str
    audit_entry_id: int

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@transaction.atomic
def subject_erase(
    *, company: Company, subject: str, principal=None, reason: str = "", via: str = "api"
) -> SubjectErasureReceipt:
    """Delete everything ``company`` holds about the end user ``subject`` across all its
    agents — every registered content kind with an ``erase_subject`` (memories with their
    chunks and revisions, shared knowledge, the archive, conversations with their messages
    and extraction runs, request-log rows, execution-report links) — in one transaction
    with one audit entry (:attr:`AuditAction.SUBJECT_ERASED`) that holds counts and a keyed
    digest of the subject, never the subject or any content. Idempotent: a second call
    deletes nothing and answers zero counts (and is audited too: the request was made).

    ``principal``: a human needs role admin (``subject_content``/delete) and erases across
    every agent; an agent (its API key) erases what **it** holds about the subject — its
    own memories, published entries, archive, conversations, log rows and report links —
    never another agent's. ``None`` is the operator's command line (``manage.py
    erase_subject``), company-wide.
    """
    require_subject(subject)
    agent = None
    if principal is not None:
        agent = principal.agent if principal.is_agent else None
        require_write(
            principal,
            "subject_content",
            DELETE,
            owner_agent_id=agent.pk if agent is not None else None,
        )
    counts: dict[str, int] = {}
    retained: list[str] = []
    for kind in content_kinds():
        if kind.erase_subject is None and not kind.subjected:
            continue
        if table_is_append_only(kind.table):  # kept by design; it never names the subject
            retained.append(kind.label)
            continue
        if kind.erase_subject is None:  # its rows go with another kind's (a cascade)
            continue
        for label, count in kind.erase_subject(company, subject, agent).items():
            counts[label] = counts.get(label, 0) + count
    digest = subject_digest(company.pk, subject)
    entry = audit_record(
        company=company,
        principal=principal,
        action_type=AuditAction.SUBJECT_ERASED,
        target_type="subject",
        target_id=digest,
        risk_level="high",
        details={
            "scope": "agent" if agent is not None else "company",
            **({"agent_id": agent.pk} if agent is not None else {}),
            "counts": counts,
            "retained": retained,
            "via": via,
            "reason": reason[:REASON_MAX_CHARS],
        },
    )
    return SubjectErasureReceipt(
        subject=subject,
        scope="agent" if agent is not None else "company",
        agent_id=agent.pk if agent is not None else None,
        counts=counts,
        retained=tuple(retained),
        subject_digest=digest,
        audit_entry_id=entry.pk,
    )
