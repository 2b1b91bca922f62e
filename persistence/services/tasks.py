"""Writes for tasks. Agents create tasks and move the ones assigned to them; people manage all."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import Agent, CollaborationMetric, Project, Task
from persistence.principal import Principal
from persistence.services._scope import apply_changes, require_same_company
from persistence.services.audit import audit_record
from synthorg.errors import AccessDeniedError, ConflictError

TASK_FIELDS = frozenset({"title", "description", "status", "assignee", "project"})
AGENT_TASK_FIELDS = frozenset({"description", "status"})
TASK_HAS_COSTS = "A task with cost records cannot be deleted (the cost ledger is permanent)."
TASK_HAS_METRICS = (
    "A task with task or collaboration metrics cannot be deleted (metrics are append-only)."
)
AGENT_MAY_NOT_REASSIGN = "An agent may change only the status and description of its tasks."

_end_hooks: list = []


def on_task_ended(hook) -> None:
    """Register ``hook(task=)``; it runs inside the transaction that ends the task (its status
    becomes completed, failed or cancelled) or deletes it (e.g. memory archives the task's
    working memories)."""
    if hook not in _end_hooks:
        _end_hooks.append(hook)


def _task_ended(task: Task) -> None:
    for hook in _end_hooks:
        hook(task=task)


@transaction.atomic
def task_create(
    *,
    principal: Principal,
    title: str,
    description: str = "",
    status: str = Task.Status.CREATED,
    assignee: Agent | None = None,
    project: Project | None = None,
) -> Task:
    company = principal.company
    require_write(principal, "task", CREATE)
    require_same_company(company, assignee=assignee, project=project)
    now = timezone.now()
    task = Task(
        company=company,
        title=title,
        description=description,
        status=status,
        assignee=assignee,
        project=project,
        created_by=principal.agent,
        created_at=now,
        updated_at=now,
        completed_at=now if status in Task.TERMINAL_STATUSES else None,
    )
    task.full_clean()
    task.save()
    return task


@transaction.atomic
def task_update(*, principal: Principal, task: Task, **changes) -> Task:
    require_write(principal, "task", UPDATE, owner_agent_id=task.assignee_id)
    if principal.is_agent and set(changes) - AGENT_TASK_FIELDS:
        raise AccessDeniedError(AGENT_MAY_NOT_REASSIGN, code="field_not_writable")
    require_same_company(
        principal.company, assignee=changes.get("assignee"), project=changes.get("project")
    )
    task = Task.objects.select_for_update().get(pk=task.pk)
    was_live = task.status not in Task.TERMINAL_STATUSES
    fields = apply_changes(task, changes, TASK_FIELDS)
    task.updated_at = timezone.now()
    if "status" in changes:
        task.completed_at = task.updated_at if task.status in Task.TERMINAL_STATUSES else None
        fields.append("completed_at")
    task.full_clean()
    task.save(update_fields=[*fields, "updated_at"])
    if was_live and task.status in Task.TERMINAL_STATUSES:
        _task_ended(task)
    return task


@transaction.atomic
def task_delete(*, principal: Principal, task: Task) -> None:
    require_write(principal, "task", DELETE, owner_agent_id=task.assignee_id)
    if task.cost_records.exists():
        raise ConflictError(TASK_HAS_COSTS, code="task_has_costs")
    if (
        task.metrics.exists()
        or CollaborationMetric.objects.filter(company=task.company, task=task).exists()
    ):
        raise ConflictError(TASK_HAS_METRICS, code="task_has_metrics")
    audit_record(
        company=principal.company,
        principal=principal,
        action_type=AuditAction.TASK_DELETED,
        target_type="task",
        target_id=task.pk,
        risk_level="medium",
        details={"title": task.title, "status": task.status},
    )
    _task_ended(task)
    task.delete()
