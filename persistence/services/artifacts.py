"""Writes for artifacts. An agent creates artifacts as itself and edits only its own."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from persistence.access import DELETE, UPDATE, owner_for_create, require_write
from persistence.models import Agent, Artifact, Task
from persistence.principal import Principal
from persistence.services._scope import apply_changes, require_same_company

ARTIFACT_FIELDS = frozenset(
    {"task", "artifact_type", "name", "uri", "content", "content_type", "metadata"}
)


@transaction.atomic
def artifact_create(
    *,
    principal: Principal,
    artifact_type: str,
    name: str,
    task: Task | None = None,
    created_by: Agent | None = None,
    uri: str = "",
    content: str = "",
    content_type: str = "",
    metadata: dict | None = None,
) -> Artifact:
    created_by = owner_for_create(principal, "artifact", created_by)
    require_same_company(principal.company, task=task, created_by=created_by)
    now = timezone.now()
    artifact = Artifact(
        company=principal.company,
        task=task,
        created_by=created_by,
        artifact_type=artifact_type,
        name=name,
        uri=uri,
        content=content,
        content_type=content_type,
        metadata=dict(metadata or {}),
        created_at=now,
        updated_at=now,
    )
    artifact.full_clean()
    artifact.save()
    return artifact


@transaction.atomic
def artifact_update(*, principal: Principal, artifact: Artifact, **changes) -> Artifact:
    require_write(principal, "artifact", UPDATE, owner_agent_id=artifact.created_by_id)
    require_same_company(principal.company, task=changes.get("task"))
    artifact = Artifact.objects.select_for_update().get(pk=artifact.pk)
    fields = apply_changes(artifact, changes, ARTIFACT_FIELDS)
    artifact.updated_at = timezone.now()
    artifact.full_clean()
    artifact.save(update_fields=[*fields, "updated_at"])
    return artifact


@transaction.atomic
def artifact_delete(*, principal: Principal, artifact: Artifact) -> None:
    require_write(principal, "artifact", DELETE, owner_agent_id=artifact.created_by_id)
    artifact.delete()
