"""Which agents received the core policy block last: one upserted row per agent.

``/memories/context`` (``MemoryService.context``) calls :func:`policy_delivery_record` after
it pinned the block; the Core policies page compares each agent's revision with the current
one. One statement per call (``INSERT … ON CONFLICT (agent_id) DO UPDATE``), never a row per
request, committed with ``synchronous_commit = off`` when it is its own transaction (it is
bookkeeping: a crash may lose the last fraction of a second of it, like the request log).
The update only moves forward: a slower concurrent request that pinned the block earlier
does not overwrite a later delivery.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from orgmemory.selectors.policies import CorePolicyBlock
from persistence.models import Agent

_UPSERT_SQL = """
INSERT INTO orgmemory_policydelivery (company_id, agent_id, revision, versions, delivered_at)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (agent_id) DO UPDATE
SET company_id = EXCLUDED.company_id, revision = EXCLUDED.revision,
    versions = EXCLUDED.versions, delivered_at = EXCLUDED.delivered_at
WHERE orgmemory_policydelivery.delivered_at <= EXCLUDED.delivered_at
"""


def policy_delivery_record(
    *, agent: Agent, block: CorePolicyBlock, now: datetime | None = None
) -> None:
    """Record that ``agent`` received ``block`` at ``now`` (default: the present)."""
    params = [
        agent.company_id,
        agent.pk,
        block.revision,
        list(block.versions),
        now or timezone.now(),
    ]
    if connection.in_atomic_block:  # the caller's transaction decides how it commits
        _upsert(params)
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        _upsert(params)


def _upsert(params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT_SQL, params)
