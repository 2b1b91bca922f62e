"""Writes for projects. Closing a project runs the registered close hooks in the same
transaction (agent memory purges the project's project-level memories there)."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Company, Project
from persistence.services._scope import apply_changes, require_same_company
from persistence.services.audit import audit_record
from synthorg.errors import ConflictError, InvalidInputError

PROJECT_NAME_TAKEN = "A project named {name!r} already exists in this company."
PROJECT_ALREADY_CLOSED = "The project is already closed."
LEAD_OTHER_COMPANY = "The project lead must be an agent of the same company."

ProjectCloseHook = Callable[[Project], object]
_close_hooks: list[ProjectCloseHook] = []


def on_project_closed(hook: ProjectCloseHook) -> None:
    """Register ``hook(project)``; it runs inside the closing transaction."""
    if hook not in _close_hooks:
        _close_hooks.append(hook)


@transaction.atomic
def project_create(
    *,
    company: Company,
    name: str,
    description: str = "",
    lead: Agent | None = None,
    status: str = Project.Status.ACTIVE,
    principal=None,
) -> Project:
    """Create a project; with ``principal`` (API calls) the write permission is checked."""
    if principal is not None:
        require_write(principal, "project", CREATE)
    if lead is not None and lead.company_id != company.pk:
        raise InvalidInputError(LEAD_OTHER_COMPANY, code="invalid_lead")
    if Project.objects.filter(company=company, name=name).exists():
        raise ConflictError(PROJECT_NAME_TAKEN.format(name=name), code="project_name_taken")
    project = Project(company=company, name=name, description=description, lead=lead, status=status)
    project.full_clean()
    project.save()
    return project


@transaction.atomic
def project_close(*, project: Project, status: str = Project.Status.COMPLETED, principal=None):
    """Mark ``project`` completed or cancelled and run the close hooks."""
    if status not in Project.CLOSED_STATUSES:
        raise InvalidInputError(
            f"A project closes as 'completed' or 'cancelled', not {status!r}.",
            code="invalid_status",
        )
    project = Project.objects.select_for_update().get(pk=project.pk)
    if project.is_closed:
        raise ConflictError(PROJECT_ALREADY_CLOSED, code="project_closed")
    project.status = status
    project.closed_at = timezone.now()
    project.save(update_fields=["status", "closed_at", "updated_at"])
    results = {getattr(hook, "__name__", "hook"): hook(project) for hook in _close_hooks}
    audit_record(
        company=project.company,
        principal=principal,
        action_type=AuditAction.PROJECT_CLOSED,
        target_type="project",
        target_id=project.pk,
        details={"status": status, "hooks": {k: v for k, v in results.items() if v is not None}},
    )
    return project


PROJECT_STILL_OPEN = (
    "Only a closed project can be deleted (deleting it also deletes its memories); close it first."
)
PROJECT_FIELDS = frozenset({"name", "description", "lead", "status"})


@transaction.atomic
def project_update(*, principal, project: Project, **changes) -> Project:
    require_write(principal, "project", UPDATE)
    require_same_company(principal.company, lead=changes.get("lead"))
    if changes.get("status") in Project.CLOSED_STATUSES:
        status = changes.pop("status")
        project = project_close(project=project, status=status, principal=principal)
    if "name" in changes and (
        Project.objects.filter(company=project.company, name=changes["name"])
        .exclude(pk=project.pk)
        .exists()
    ):
        raise ConflictError(
            PROJECT_NAME_TAKEN.format(name=changes["name"]), code="project_name_taken"
        )
    fields = apply_changes(project, changes, PROJECT_FIELDS)
    if "status" in changes and project.closed_at is not None:  # reopened
        project.closed_at = None
        fields.append("closed_at")
    if fields:
        project.full_clean(validate_unique=False)
        project.save(update_fields=[*fields, "updated_at"])
    return project


@transaction.atomic
def project_delete(*, principal, project: Project) -> None:
    require_write(principal, "project", DELETE)
    if not project.is_closed:
        raise ConflictError(PROJECT_STILL_OPEN, code="project_open")
    audit_record(
        company=project.company,
        principal=principal,
        action_type=AuditAction.PROJECT_DELETED,
        target_type="project",
        target_id=project.pk,
        risk_level="medium",
        details={"name": project.name},
    )
    project.delete()
