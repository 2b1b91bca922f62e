"""Serializers for operational data. Related objects are referenced by id and resolved only
inside the caller's company (another company's id is "does not exist", never a leak)."""

from __future__ import annotations

from rest_framework import serializers

from persistence.models import (
    Agent,
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
from persistence.models.costs import COST_DECIMAL_PLACES, COST_MAX_DIGITS
from persistence.services.costs import MAX_TOKENS_PER_RECORD
from synthorg.api.fields import YearMonthField
from synthorg.api.serializers import ModelSerializer, Serializer


class CompanyScopedSerializer(ModelSerializer):
    """Restricts every related-object field to the requesting principal's company."""

    def get_fields(self):
        fields = super().get_fields()
        request = self.context.get("request")
        company = getattr(getattr(request, "user", None), "company", None)
        for field in fields.values():
            if isinstance(field, serializers.PrimaryKeyRelatedField) and not field.read_only:
                field.queryset = (
                    field.queryset.filter(company=company)
                    if company is not None
                    else field.queryset.none()
                )
        return fields


def _agents():
    return serializers.PrimaryKeyRelatedField(
        queryset=Agent.objects.all(), required=False, allow_null=True
    )


def _tasks():
    return serializers.PrimaryKeyRelatedField(
        queryset=Task.objects.all(), required=False, allow_null=True
    )


class TaskSerializer(CompanyScopedSerializer):
    assignee = _agents()
    project = serializers.PrimaryKeyRelatedField(
        queryset=Project.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = Task
        fields = (
            "id",
            "title",
            "description",
            "status",
            "assignee",
            "project",
            "created_by",
            "created_at",
            "updated_at",
            "completed_at",
        )
        read_only_fields = ("created_by", "created_at", "updated_at", "completed_at")


class CostRecordSerializer(CompanyScopedSerializer):
    agent = _agents()
    task = _tasks()
    cost = serializers.DecimalField(
        max_digits=COST_MAX_DIGITS, decimal_places=COST_DECIMAL_PLACES, coerce_to_string=True
    )
    currency = serializers.RegexField(
        r"^[A-Za-z]{3}$", max_length=3, default="USD", help_text="ISO 4217 code"
    )
    input_tokens = serializers.IntegerField(
        min_value=0, max_value=MAX_TOKENS_PER_RECORD, required=False, default=0
    )
    output_tokens = serializers.IntegerField(
        min_value=0, max_value=MAX_TOKENS_PER_RECORD, required=False, default=0
    )
    occurred_at = serializers.DateTimeField(required=False)

    class Meta:
        model = CostRecord
        fields = (
            "id",
            "agent",
            "task",
            "provider",
            "model",
            "input_tokens",
            "output_tokens",
            "cost",
            "currency",
            "occurred_at",
            "created_at",
        )
        read_only_fields = ("created_at",)


class MessageSerializer(CompanyScopedSerializer):
    class Meta:
        model = Message
        fields = (
            "id",
            "channel",
            "sender_agent",
            "sender_user",
            "content",
            "metadata",
            "created_at",
        )
        read_only_fields = ("sender_agent", "sender_user", "created_at")


class AuditEntrySerializer(CompanyScopedSerializer):
    class Meta:
        model = AuditEntry
        fields = (
            "id",
            "actor_agent",
            "actor_user",
            "action_type",
            "target_type",
            "target_id",
            "verdict",
            "risk_level",
            "details",
            "created_at",
        )
        read_only_fields = ("actor_agent", "actor_user", "created_at")


class ParkedContextSerializer(CompanyScopedSerializer):
    agent = _agents()
    task = _tasks()

    class Meta:
        model = ParkedContext
        fields = (
            "id",
            "agent",
            "task",
            "execution_id",
            "reason",
            "context",
            "created_at",
            "resumed_at",
        )
        read_only_fields = ("created_at", "resumed_at")


class ParkedContextUpdateSerializer(Serializer):
    resumed = serializers.BooleanField(help_text="Set true to resume the parked execution.")

    def validate_resumed(self, value):
        if not value:
            raise serializers.ValidationError("A parked context can only be resumed.")
        return value


class RuntimeStateSerializer(CompanyScopedSerializer):
    current_task = _tasks()

    class Meta:
        model = AgentRuntimeState
        fields = ("agent", "status", "current_task", "execution_id", "state", "updated_at")
        read_only_fields = ("agent", "updated_at")
        # PUT replaces the whole state: the status is part of it (the service needs it).
        extra_kwargs = {"status": {"required": True}}


class HeartbeatSerializer(CompanyScopedSerializer):
    agent = _agents()

    class Meta:
        model = Heartbeat
        fields = ("id", "agent", "execution_id", "status", "details", "created_at")
        read_only_fields = ("created_at",)


class LifecycleEventSerializer(CompanyScopedSerializer):
    agent = _agents()

    class Meta:
        model = LifecycleEvent
        fields = ("id", "agent", "event_type", "details", "created_at")
        read_only_fields = ("created_at",)


class CheckpointSerializer(CompanyScopedSerializer):
    agent = _agents()
    task = _tasks()

    class Meta:
        model = Checkpoint
        fields = ("id", "agent", "task", "execution_id", "turn", "state", "created_at")
        read_only_fields = ("created_at",)
        validators = []  # uniqueness is the service's (409), not a 400 from the serializer


class TaskMetricSerializer(CompanyScopedSerializer):
    agent = _agents()

    class Meta:
        model = TaskMetric
        fields = (
            "id",
            "task",
            "agent",
            "success",
            "duration_seconds",
            "turns",
            "tokens",
            "quality_score",
            "details",
            "created_at",
        )
        read_only_fields = ("created_at",)


class CollaborationMetricSerializer(CompanyScopedSerializer):
    agent = _agents()
    task = _tasks()
    score = serializers.FloatField(min_value=0.0, max_value=1.0)

    class Meta:
        model = CollaborationMetric
        fields = (
            "id",
            "agent",
            "peer",
            "task",
            "interaction_type",
            "score",
            "details",
            "created_at",
        )
        read_only_fields = ("created_at",)


class ArtifactSerializer(CompanyScopedSerializer):
    created_by = _agents()
    task = _tasks()

    class Meta:
        model = Artifact
        fields = (
            "id",
            "task",
            "created_by",
            "artifact_type",
            "name",
            "uri",
            "content",
            "content_type",
            "metadata",
            "created_at",
            "updated_at",
        )
        read_only_fields = ("created_at", "updated_at")


class ProjectSerializer(CompanyScopedSerializer):
    lead = _agents()

    class Meta:
        model = Project
        fields = (
            "id",
            "name",
            "description",
            "status",
            "lead",
            "created_at",
            "updated_at",
            "closed_at",
        )
        read_only_fields = ("created_at", "updated_at", "closed_at")
        validators = []  # name uniqueness is the service's (409)


class SettingSerializer(ModelSerializer):
    class Meta:
        model = Setting
        fields = ("namespace", "key", "value", "updated_by", "created_at", "updated_at")
        read_only_fields = fields


class SettingValueSerializer(Serializer):
    value = serializers.JSONField()


class PresetSerializer(ModelSerializer):
    class Meta:
        model = PersonalityPreset
        fields = ("id", "name", "description", "traits", "created_at", "updated_at")
        read_only_fields = ("created_at", "updated_at")
        validators = []  # name uniqueness is the service's (409)


# Cost summary and budget -------------------------------------------------------------


class CurrencyTotalSerializer(Serializer):
    currency = serializers.CharField()
    cost = serializers.DecimalField(max_digits=40, decimal_places=COST_DECIMAL_PLACES)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    records = serializers.IntegerField()


class CostGroupSerializer(Serializer):
    key = serializers.CharField(allow_null=True)
    label = serializers.CharField()
    totals = CurrencyTotalSerializer(many=True)


class CostSummarySerializer(Serializer):
    group_by = serializers.CharField()
    # ``from``/``to`` are Python keywords: declared under those names below.
    totals = CurrencyTotalSerializer(many=True)
    groups = CostGroupSerializer(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(
            source="since", allow_null=True, help_text="Inclusive start of the range."
        )
        fields["to"] = serializers.DateTimeField(
            source="until", allow_null=True, help_text="Exclusive end of the range."
        )
        return fields


class CostSummaryQuerySerializer(Serializer):
    group_by = serializers.ChoiceField(choices=["agent", "task", "model", "day"])
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)

    def to_internal_value(self, data):
        data = {
            "group_by": data.get("group_by"),
            **({"since": data["from"]} if data.get("from") else {}),
            **({"until": data["to"]} if data.get("to") else {}),
        }
        try:
            return super().to_internal_value({k: v for k, v in data.items() if v is not None})
        except serializers.ValidationError as exc:
            detail = {{"since": "from", "until": "to"}.get(k, k): v for k, v in exc.detail.items()}
            raise serializers.ValidationError(detail) from exc


class BudgetQuerySerializer(Serializer):
    month = YearMonthField(required=False, help_text="YYYY-MM (default: this month)")


class BudgetStatusSerializer(Serializer):
    month = serializers.CharField()
    configured = serializers.BooleanField()
    currency = serializers.CharField(allow_null=True)
    limit = serializers.DecimalField(
        max_digits=40, decimal_places=COST_DECIMAL_PLACES, allow_null=True
    )
    spent = serializers.DecimalField(max_digits=40, decimal_places=COST_DECIMAL_PLACES)
    remaining = serializers.DecimalField(
        max_digits=40, decimal_places=COST_DECIMAL_PLACES, allow_null=True
    )
    utilization = serializers.DecimalField(max_digits=20, decimal_places=4, allow_null=True)
    alert_threshold = serializers.DecimalField(max_digits=6, decimal_places=4, allow_null=True)
    status = serializers.ChoiceField(choices=["unconfigured", "ok", "warning", "exceeded"])
    other_currencies = CurrencyTotalSerializer(many=True)


class MessageHistoryQuerySerializer(Serializer):
    channel = serializers.CharField(max_length=200)
    limit = serializers.IntegerField(min_value=1, max_value=500, required=False)
