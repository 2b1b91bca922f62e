"""Which agents received the core policy block last: one upserted row per agent.

``/memories/context`` (``MemoryService.context``) hands a :func:`policy_delivery` to
:func:`synthorg.after_response.after_response` after it pinned the block (written after the
response is sent, by :func:`policy_deliveries_write`); the Core policies page compares each
agent's revision with the current one. One statement per request (``INSERT … ON CONFLICT
(agent_id) DO UPDATE``), never a row per request, committed with ``synchronous_commit = off``
when it is its own transaction (bookkeeping: a crash may lose the last fraction of a second of
it, like the request log). The update only moves forward: a slower concurrent request that
pinned the block earlier does not overwrite a later delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from orgmemory.selectors.policies import CorePolicyBlock
from persistence.models import Agent

_UPSERT_SQL = """
INSERT INTO orgmemory_policydelivery (company_id, agent_id, revision, versions, delivered_at)
VALUES {values}
ON CONFLICT (agent_id) DO UPDATE
SET company_id = EXCLUDED.company_id, revision = EXCLUDED.revision,
    versions = EXCLUDED.versions, delivered_at = EXCLUDED.delivered_at
WHERE orgmemory_policydelivery.delivered_at <= EXCLUDED.delivered_at
"""


@dataclass(frozen=True)
class Delivery:
    """``agent`` received ``block`` at ``at``."""

    agent: Agent
    block: CorePolicyBlock
    at: datetime


def policy_delivery(*, agent: Agent, block: CorePolicyBlock, now: datetime | None = None):
    """The delivery of ``block`` to ``agent`` at ``now`` (default: the present), unsaved."""
    return Delivery(agent=agent, block=block, at=now or timezone.now())


def policy_deliveries_write(deliveries: Sequence[Delivery]) -> None:
    """Upsert ``deliveries`` in one statement (the latest per agent)."""
    latest: dict[int, Delivery] = {}
    for delivery in deliveries:
        seen = latest.get(delivery.agent.pk)
        if seen is None or delivery.at >= seen.at:
            latest[delivery.agent.pk] = delivery
    if not latest:
        return
    params: list = []
    for delivery in latest.values():
        params += [
            delivery.agent.company_id,
            delivery.agent.pk,
            delivery.block.revision,
            list(delivery.block.versions),
            delivery.at,
        ]
    sql = _UPSERT_SQL.format(values=", ".join(["(%s, %s, %s, %s, %s)"] * len(latest)))
    if connection.in_atomic_block:  # the caller's transaction decides how it commits
        _execute(sql, params)
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        _execute(sql, params)


def policy_delivery_record(
    *, agent: Agent, block: CorePolicyBlock, now: datetime | None = None
) -> None:
    """Record now that ``agent`` received ``block`` at ``now`` (default: the present)."""
    policy_deliveries_write([policy_delivery(agent=agent, block=block, now=now)])


def _execute(sql: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
