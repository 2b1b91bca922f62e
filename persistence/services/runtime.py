"""Writes for what agents are doing: heartbeats, lifecycle events, runtime state,
checkpoints and parked contexts. Agents write their own; people may pause or clean up."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from persistence.access import DELETE, UPDATE, owner_for_create, require_write
from persistence.models import (
    Agent,
    AgentRuntimeState,
    Checkpoint,
    Heartbeat,
    LifecycleEvent,
    ParkedContext,
    Task,
)
from persistence.principal import Principal
from persistence.services._scope import require_same_company
from synthorg.errors import ConflictError

CHECKPOINT_EXISTS = "A checkpoint for execution {execution_id!r} turn {turn} already exists."
ALREADY_RESUMED = "This parked context was already resumed."


@transaction.atomic
def heartbeat_record(
    *,
    principal: Principal,
    agent: Agent | None = None,
    execution_id: str = "",
    status: str = "",
    details: dict | None = None,
) -> Heartbeat:
    agent = owner_for_create(principal, "heartbeat", agent)
    return Heartbeat.objects.create(
        company=principal.company,
        agent=agent,
        execution_id=execution_id,
        status=status,
        details=dict(details or {}),
        created_at=timezone.now(),
    )


@transaction.atomic
def lifecycle_event_record(
    *,
    principal: Principal,
    agent: Agent | None = None,
    event_type: str,
    details: dict | None = None,
) -> LifecycleEvent:
    agent = owner_for_create(principal, "lifecycle_event", agent)
    require_same_company(principal.company, agent=agent)
    event = LifecycleEvent(
        company=principal.company,
        agent=agent,
        event_type=event_type,
        details=dict(details or {}),
        created_at=timezone.now(),
    )
    event.full_clean()
    event.save()
    return event


@transaction.atomic
def runtime_state_set(
    *,
    principal: Principal,
    agent: Agent,
    status: str,
    current_task: Task | None = None,
    execution_id: str = "",
    state: dict | None = None,
) -> AgentRuntimeState:
    """Upsert ``agent``'s one runtime state. Agents set their own; operators may set any."""
    require_same_company(principal.company, agent=agent, current_task=current_task)
    existing = AgentRuntimeState.objects.select_for_update().filter(agent=agent).first()
    if existing is None:
        owner_for_create(principal, "runtime_state", agent)
        existing = AgentRuntimeState(company=principal.company, agent=agent)
    else:
        require_write(principal, "runtime_state", UPDATE, owner_agent_id=agent.pk)
    existing.status = status
    existing.current_task = current_task
    existing.execution_id = execution_id
    existing.state = dict(state or {})
    existing.updated_at = timezone.now()
    existing.full_clean(validate_unique=False)
    existing.save()
    return existing


@transaction.atomic
def checkpoint_save(
    *,
    principal: Principal,
    execution_id: str,
    turn: int = 0,
    task: Task | None = None,
    state: dict | None = None,
    agent: Agent | None = None,
) -> Checkpoint:
    agent = owner_for_create(principal, "checkpoint", agent)
    require_same_company(principal.company, task=task)
    if Checkpoint.objects.filter(
        company=principal.company, execution_id=execution_id, turn=turn
    ).exists():
        raise ConflictError(
            CHECKPOINT_EXISTS.format(execution_id=execution_id, turn=turn),
            code="checkpoint_exists",
        )
    try:
        with transaction.atomic():
            return Checkpoint.objects.create(
                company=principal.company,
                agent=agent,
                task=task,
                execution_id=execution_id,
                turn=turn,
                state=dict(state or {}),
                created_at=timezone.now(),
            )
    except IntegrityError as exc:  # a concurrent save of the same turn
        raise ConflictError(
            CHECKPOINT_EXISTS.format(execution_id=execution_id, turn=turn),
            code="checkpoint_exists",
        ) from exc


@transaction.atomic
def checkpoint_delete(*, principal: Principal, checkpoint: Checkpoint) -> None:
    require_write(principal, "checkpoint", DELETE, owner_agent_id=checkpoint.agent_id)
    checkpoint.delete()


@transaction.atomic
def parked_context_park(
    *,
    principal: Principal,
    execution_id: str,
    reason: str = "",
    context: dict | None = None,
    task: Task | None = None,
    agent: Agent | None = None,
) -> ParkedContext:
    agent = owner_for_create(principal, "parked_context", agent)
    require_same_company(principal.company, task=task)
    parked = ParkedContext(
        company=principal.company,
        agent=agent,
        task=task,
        execution_id=execution_id,
        reason=reason,
        context=dict(context or {}),
        created_at=timezone.now(),
    )
    parked.full_clean()
    parked.save()
    return parked


@transaction.atomic
def parked_context_resume(*, principal: Principal, parked: ParkedContext) -> ParkedContext:
    require_write(principal, "parked_context", UPDATE, owner_agent_id=parked.agent_id)
    parked = ParkedContext.objects.select_for_update().get(pk=parked.pk)
    if parked.resumed_at is not None:
        raise ConflictError(ALREADY_RESUMED, code="already_resumed")
    parked.resumed_at = timezone.now()
    parked.save(update_fields=["resumed_at"])
    return parked


@transaction.atomic
def parked_context_delete(*, principal: Principal, parked: ParkedContext) -> None:
    require_write(principal, "parked_context", DELETE, owner_agent_id=parked.agent_id)
    parked.delete()
