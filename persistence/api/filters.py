"""django-filter FilterSets for the operational-data list endpoints.

Foreign keys filter by id (``NumberFilter`` on ``<fk>_id``): the list is already scoped to
the caller's company, so another company's id simply matches nothing, and no extra query
validates the choice. Time ranges are ``from`` (inclusive) and ``to`` (exclusive).
"""

from __future__ import annotations

import django_filters as df

from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CollaborationMetric,
    CostRecord,
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
from synthorg.api.fields import UtcDateTimeFilter


def _with_time_range(filterset: type[df.FilterSet]) -> type[df.FilterSet]:
    """Expose the ``since``/``until`` filters as ``from``/``to`` (Python keywords otherwise)."""
    filterset.base_filters["from"] = filterset.base_filters.pop("since")
    filterset.base_filters["to"] = filterset.base_filters.pop("until")
    return filterset


def _id(field: str, label: str) -> df.NumberFilter:
    return df.NumberFilter(field_name=f"{field}_id", label=label)


class TaskFilter(df.FilterSet):
    status = df.ChoiceFilter(choices=Task.Status.choices)
    assignee = _id("assignee", "Assignee agent id")
    project = _id("project", "Project id")
    created_by = _id("created_by", "Creator agent id")

    class Meta:
        model = Task
        fields = ("status", "assignee", "project", "created_by")


@_with_time_range
class CostRecordFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    task = _id("task", "Task id")
    model = df.CharFilter()
    provider = df.CharFilter()
    currency = df.CharFilter()
    since = UtcDateTimeFilter(field_name="occurred_at", lookup_expr="gte", label="From")
    until = UtcDateTimeFilter(field_name="occurred_at", lookup_expr="lt", label="To")

    class Meta:
        model = CostRecord
        fields = ("agent", "task", "model", "provider", "currency")


class MessageFilter(df.FilterSet):
    channel = df.CharFilter()
    sender_agent = _id("sender_agent", "Sender agent id")

    class Meta:
        model = Message
        fields = ("channel", "sender_agent")


@_with_time_range
class AuditEntryFilter(df.FilterSet):
    agent = _id("actor_agent", "Actor agent id")
    action_type = df.CharFilter()
    verdict = df.ChoiceFilter(choices=AuditEntry.Verdict.choices)
    risk_level = df.ChoiceFilter(choices=AuditEntry.RiskLevel.choices)
    since = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", label="From")
    until = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", label="To")

    class Meta:
        model = AuditEntry
        fields = ("agent", "action_type", "verdict", "risk_level")


class ParkedContextFilter(df.FilterSet):
    execution_id = df.CharFilter()
    agent = _id("agent", "Agent id")
    task = _id("task", "Task id")
    resumed = df.BooleanFilter(field_name="resumed_at", lookup_expr="isnull", exclude=True)

    class Meta:
        model = ParkedContext
        fields = ("execution_id", "agent", "task", "resumed")


class RuntimeStateFilter(df.FilterSet):
    status = df.ChoiceFilter(choices=AgentRuntimeState.Status.choices)
    active = df.BooleanFilter(method="filter_active", label="Only agents that are active")

    class Meta:
        model = AgentRuntimeState
        fields = ("status", "active")

    def filter_active(self, queryset, name, value):
        statuses = AgentRuntimeState.ACTIVE_STATUSES
        return (
            queryset.filter(status__in=statuses) if value else queryset.exclude(status__in=statuses)
        )


class HeartbeatFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    execution_id = df.CharFilter()

    class Meta:
        model = Heartbeat
        fields = ("agent", "execution_id")


class LifecycleEventFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    event_type = df.CharFilter()

    class Meta:
        model = LifecycleEvent
        fields = ("agent", "event_type")


class CheckpointFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    task = _id("task", "Task id")
    execution_id = df.CharFilter()

    class Meta:
        model = Checkpoint
        fields = ("agent", "task", "execution_id")


class TaskMetricFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    task = _id("task", "Task id")
    success = df.BooleanFilter()

    class Meta:
        model = TaskMetric
        fields = ("agent", "task", "success")


class CollaborationMetricFilter(df.FilterSet):
    agent = _id("agent", "Agent id")
    peer = _id("peer", "Peer agent id")
    interaction_type = df.CharFilter()

    class Meta:
        model = CollaborationMetric
        fields = ("agent", "peer", "interaction_type")


class ArtifactFilter(df.FilterSet):
    task = _id("task", "Task id")
    created_by = _id("created_by", "Creator agent id")
    artifact_type = df.CharFilter()

    class Meta:
        model = Artifact
        fields = ("task", "created_by", "artifact_type")


class ProjectFilter(df.FilterSet):
    status = df.ChoiceFilter(choices=Project.Status.choices)
    lead = _id("lead", "Lead agent id")

    class Meta:
        model = Project
        fields = ("status", "lead")


class SettingFilter(df.FilterSet):
    namespace = df.CharFilter()
    key = df.CharFilter()

    class Meta:
        model = Setting
        fields = ("namespace", "key")


class PresetFilter(df.FilterSet):
    name = df.CharFilter()

    class Meta:
        model = PersonalityPreset
        fields = ("name",)
