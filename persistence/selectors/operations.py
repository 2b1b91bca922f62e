"""Reads for operational data: the seed's repository queries, always scoped to one company.

Each function returns a lazily evaluated, stably ordered queryset whose filters match an
index (``company`` first, then the filter column, then the ordering columns).
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from persistence.models import (
    Agent,
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CollaborationMetric,
    Company,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from persistence.principal import Principal
from persistence.selectors.filtering import where_given


def _time_range(qs: QuerySet, field: str, since: datetime | None, until: datetime | None):
    return where_given(qs, **{f"{field}__gte": since, f"{field}__lt": until})


# Tasks ---------------------------------------------------------------------------------


def tasks_list(
    company: Company,
    *,
    status: str | None = None,
    assignee: Agent | int | None = None,
    project: Project | int | None = None,
) -> QuerySet[Task]:
    qs = Task.objects.filter(company=company)
    qs = where_given(qs, status=status, assignee=assignee, project=project)
    return qs.order_by("-created_at", "-id")


# Messages ------------------------------------------------------------------------------


def messages_list(company: Company, *, channel: str | None = None) -> QuerySet[Message]:
    qs = Message.objects.filter(company=company)
    qs = where_given(qs, channel=channel)
    return qs.order_by("-created_at", "-id")


def message_history(company: Company, channel: str, *, limit: int | None = None) -> list[Message]:
    """The channel's messages oldest first; with ``limit``, only the newest ``limit`` of them."""
    qs = messages_list(company, channel=channel)
    newest_first = list(qs[:limit] if limit is not None else qs)
    return newest_first[::-1]


# Audit ---------------------------------------------------------------------------------


def audit_entries_list(
    company: Company,
    *,
    agent: Agent | int | None = None,
    action_type: str | None = None,
    verdict: str | None = None,
    risk_level: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEntry]:
    qs = AuditEntry.objects.filter(company=company)
    qs = where_given(
        qs, actor_agent=agent, action_type=action_type, verdict=verdict, risk_level=risk_level
    )
    return _time_range(qs, "created_at", since, until).order_by("-created_at", "-id")


def audit_entries_visible_to(principal: Principal) -> QuerySet[AuditEntry]:
    """People see the company's whole trail; an agent sees only its own actions."""
    if principal.is_agent:
        return audit_entries_list(principal.company, agent=principal.agent)
    return audit_entries_list(principal.company)


# Runtime -------------------------------------------------------------------------------


def parked_contexts_list(
    company: Company,
    *,
    execution_id: str | None = None,
    agent: Agent | int | None = None,
    task: Task | int | None = None,
) -> QuerySet[ParkedContext]:
    qs = ParkedContext.objects.filter(company=company)
    qs = where_given(qs, execution_id=execution_id, agent=agent, task=task)
    return qs.order_by("-created_at", "-id")


def runtime_states_list(
    company: Company, *, active_only: bool = False
) -> QuerySet[AgentRuntimeState]:
    qs = AgentRuntimeState.objects.filter(company=company)
    if active_only:
        qs = qs.filter(status__in=AgentRuntimeState.ACTIVE_STATUSES)
    return qs.order_by("agent_id")


def runtime_state_for_agent(company: Company, agent: Agent | int) -> AgentRuntimeState | None:
    return AgentRuntimeState.objects.filter(company=company, agent=agent).first()


def heartbeats_list(company: Company, *, agent: Agent | int | None = None) -> QuerySet[Heartbeat]:
    qs = Heartbeat.objects.filter(company=company)
    qs = where_given(qs, agent=agent)
    return qs.order_by("-created_at", "-id")


def lifecycle_events_list(
    company: Company, *, agent: Agent | int | None = None, event_type: str | None = None
) -> QuerySet[LifecycleEvent]:
    qs = LifecycleEvent.objects.filter(company=company)
    qs = where_given(qs, agent=agent, event_type=event_type)
    return qs.order_by("-created_at", "-id")


def checkpoints_list(
    company: Company,
    *,
    agent: Agent | int | None = None,
    task: Task | int | None = None,
    execution_id: str | None = None,
) -> QuerySet[Checkpoint]:
    qs = Checkpoint.objects.filter(company=company)
    qs = where_given(qs, agent=agent, task=task, execution_id=execution_id)
    return qs.order_by("-created_at", "-id")


# Metrics -------------------------------------------------------------------------------


def task_metrics_list(
    company: Company, *, agent: Agent | int | None = None, task: Task | int | None = None
) -> QuerySet[TaskMetric]:
    qs = TaskMetric.objects.filter(company=company)
    qs = where_given(qs, agent=agent, task=task)
    return qs.order_by("-created_at", "-id")


def collaboration_metrics_list(
    company: Company, *, agent: Agent | int | None = None, peer: Agent | int | None = None
) -> QuerySet[CollaborationMetric]:
    qs = CollaborationMetric.objects.filter(company=company)
    qs = where_given(qs, agent=agent, peer=peer)
    return qs.order_by("-created_at", "-id")


# Artifacts, projects, settings, presets ------------------------------------------------


def artifacts_list(
    company: Company,
    *,
    task: Task | int | None = None,
    created_by: Agent | int | None = None,
    artifact_type: str | None = None,
) -> QuerySet[Artifact]:
    qs = Artifact.objects.filter(company=company)
    qs = where_given(qs, task=task, created_by=created_by, artifact_type=artifact_type)
    return qs.order_by("-created_at", "-id")


def projects_list(
    company: Company, *, status: str | None = None, lead: Agent | int | None = None
) -> QuerySet[Project]:
    qs = Project.objects.filter(company=company)
    qs = where_given(qs, status=status, lead=lead)
    return qs.order_by("name", "id")


def settings_list(company: Company, *, namespace: str | None = None) -> QuerySet[Setting]:
    qs = Setting.objects.filter(company=company)
    qs = where_given(qs, namespace=namespace)
    return qs.order_by("namespace", "key", "id")


def setting_get(company: Company, namespace: str, key: str) -> Setting | None:
    return Setting.objects.filter(company=company, namespace=namespace, key=key).first()


def presets_list(company: Company) -> QuerySet[PersonalityPreset]:
    return PersonalityPreset.objects.filter(company=company).order_by("name", "id")


def preset_by_name(company: Company, name: str) -> PersonalityPreset | None:
    return PersonalityPreset.objects.filter(company=company, name=name).first()
