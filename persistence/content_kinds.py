"""Operational records that carry what an agent said or held in its working state, in the
content registry: channel messages it sent, its checkpoints and parked contexts. Exported
for portability (not importable: they belong to executions that ran elsewhere) and erased
with the agent's content unless their table is append-only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from persistence.content_registry import ContentKind
from persistence.models import Agent, Checkpoint, Company, Message, ParkedContext

CHUNK = 500


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _rows(model, company: Company, agent: Agent | None, owner: str = "agent"):
    rows = model.objects.filter(company=company, **{f"{owner}__isnull": False})
    if agent is not None:
        rows = rows.filter(**{owner: agent})
    return rows.select_related(owner).order_by("created_at", "id").iterator(CHUNK)


def export_messages(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(Message, company, agent, owner="sender_agent"):
        yield {
            "id": row.pk,
            "agent": row.sender_agent.name,
            "channel": row.channel,
            "content": row.content,
            "metadata": row.metadata,
            "created_at": _iso(row.created_at),
        }


def export_checkpoints(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(Checkpoint, company, agent):
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "execution_id": row.execution_id,
            "turn": row.turn,
            "state": row.state,
            "created_at": _iso(row.created_at),
        }


def export_parked_contexts(company: Company, agent: Agent | None) -> Iterator[dict]:
    for row in _rows(ParkedContext, company, agent):
        yield {
            "id": row.pk,
            "agent": row.agent.name,
            "execution_id": row.execution_id,
            "reason": row.reason,
            "context": row.context,
            "created_at": _iso(row.created_at),
            "resumed_at": _iso(row.resumed_at),
        }


CONTENT_KINDS = (
    ContentKind(
        name="channel_message",
        label="channel messages",
        export=export_messages,
        erase=lambda agent: Message.objects.filter(sender_agent=agent).delete()[0],
        order=50,
        table=Message._meta.db_table,
    ),
    ContentKind(
        name="checkpoint",
        label="checkpoints",
        export=export_checkpoints,
        erase=lambda agent: Checkpoint.objects.filter(agent=agent).delete()[0],
        order=51,
        table=Checkpoint._meta.db_table,
    ),
    ContentKind(
        name="parked_context",
        label="parked contexts",
        export=export_parked_contexts,
        erase=lambda agent: ParkedContext.objects.filter(agent=agent).delete()[0],
        order=52,
        table=ParkedContext._meta.db_table,
    ),
)
