"""Writes for task and collaboration metrics (agents report their own)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from persistence.access import owner_for_create
from persistence.models import Agent, CollaborationMetric, Task, TaskMetric
from persistence.principal import Principal
from persistence.services._scope import require_same_company
from synthorg.errors import InvalidInputError

PEER_IS_SELF = "An agent cannot rate a collaboration with itself."


@transaction.atomic
def task_metric_record(
    *, principal: Principal, task: Task, agent: Agent | None = None, success: bool, **figures
) -> TaskMetric:
    agent = owner_for_create(principal, "task_metric", agent)
    require_same_company(principal.company, task=task, agent=agent)
    metric = TaskMetric(
        company=principal.company,
        task=task,
        agent=agent,
        success=success,
        created_at=timezone.now(),
        **figures,
    )
    metric.full_clean()
    metric.save()
    return metric


@transaction.atomic
def collaboration_metric_record(
    *,
    principal: Principal,
    peer: Agent,
    interaction_type: str,
    score: float,
    task: Task | None = None,
    agent: Agent | None = None,
    details: dict | None = None,
) -> CollaborationMetric:
    agent = owner_for_create(principal, "collaboration_metric", agent)
    require_same_company(principal.company, peer=peer, task=task, agent=agent)
    if agent is not None and agent.pk == peer.pk:
        raise InvalidInputError(PEER_IS_SELF, code="peer_is_self")
    metric = CollaborationMetric(
        company=principal.company,
        agent=agent,
        peer=peer,
        task=task,
        interaction_type=interaction_type,
        score=score,
        details=dict(details or {}),
        created_at=timezone.now(),
    )
    metric.full_clean()
    metric.save()
    return metric
