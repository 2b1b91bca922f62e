"""Request and response shapes of the execution-report API.

The request serializer documents the body in the OpenAPI schema; validation itself is done
once, by the service (:class:`memory.procedural.domain.ExecutionReportInput`), so REST and
MCP accept exactly the same reports.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory.procedural import domain
from memory.procedural.models import CAPTURE_METHOD_CHOICES, ExecutionCapture, ExecutionReport
from synthorg.api.fields import SubjectField
from synthorg.api.serializers import ModelSerializer, Serializer


class ReportedErrorSerializer(Serializer):
    category = serializers.CharField(max_length=domain.ERROR_CATEGORY_MAX)
    message = serializers.CharField(
        max_length=domain.ERROR_MESSAGE_MAX, required=False, allow_blank=True
    )


class ToolCallSerializer(Serializer):
    name = serializers.CharField(max_length=domain.TOOL_NAME_MAX)
    status = serializers.ChoiceField(choices=[s.value for s in domain.ToolCallStatus])
    error = serializers.CharField(
        max_length=domain.TOOL_ERROR_MAX, required=False, allow_null=True, allow_blank=True
    )
    duration_ms = serializers.IntegerField(
        min_value=0, max_value=domain.MAX_DURATION_MS, required=False
    )


class ExecutionReportSubmitSerializer(Serializer):
    task_id = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, help_text="A task of your company."
    )
    task_title = serializers.CharField(
        max_length=domain.TASK_TITLE_MAX, required=False, allow_blank=True
    )
    task_type = serializers.CharField(
        max_length=domain.TASK_TYPE_MAX, required=False, allow_blank=True
    )
    task_description = serializers.CharField(
        max_length=domain.TASK_DESCRIPTION_MAX, required=False, allow_blank=True
    )
    outcome = serializers.ChoiceField(choices=[o.value for o in domain.Outcome])
    error = ReportedErrorSerializer(required=False, allow_null=True)
    tool_calls = ToolCallSerializer(many=True, required=False, max_length=domain.MAX_TOOL_CALLS)
    retry_count = serializers.IntegerField(min_value=0, max_value=domain.MAX_COUNT, required=False)
    turn_count = serializers.IntegerField(min_value=0, max_value=domain.MAX_COUNT, required=False)
    quality_score = serializers.FloatField(
        min_value=0.0, max_value=10.0, required=False, allow_null=True
    )
    duration_ms = serializers.IntegerField(
        min_value=0, max_value=domain.MAX_DURATION_MS, required=False
    )
    subject = SubjectField(
        required=False,
        allow_null=True,
        help_text="The end user the task served (see Subjects); erasing them unlinks the report.",
    )
    recovery = serializers.CharField(
        max_length=domain.RECOVERY_MAX,
        required=False,
        allow_blank=True,
        help_text="What the agent tried in order to recover.",
    )


class ExecutionReportAcceptedSerializer(Serializer):
    id = serializers.UUIDField()
    capture = serializers.ChoiceField(
        choices=[
            ExecutionCapture.Status.QUEUED,
            ExecutionCapture.Status.DISABLED,
            ExecutionCapture.Status.NOT_APPLICABLE,
        ]
    )


class ExecutionReportSerializer(ModelSerializer):
    agent_id = serializers.IntegerField(read_only=True)
    task_id = serializers.IntegerField(read_only=True, allow_null=True)
    error = serializers.SerializerMethodField()
    capture_status = serializers.SerializerMethodField()
    capture_reason = serializers.SerializerMethodField()
    capture_strategy = serializers.SerializerMethodField()
    capture_method = serializers.SerializerMethodField()
    capture_attempts = serializers.SerializerMethodField()
    capture_next_attempt_at = serializers.SerializerMethodField()
    memory_id = serializers.SerializerMethodField()
    subject = serializers.SerializerMethodField(help_text="The end user the task served.")

    class Meta:
        model = ExecutionReport
        fields = (
            "id",
            "agent_id",
            "subject",
            "task_id",
            "task_title",
            "task_type",
            "task_description",
            "outcome",
            "error",
            "tool_calls",
            "retry_count",
            "turn_count",
            "quality_score",
            "duration_ms",
            "recovery",
            "redactions",
            "created_at",
            "capture_status",
            "capture_reason",
            "capture_strategy",
            "capture_method",
            "capture_attempts",
            "capture_next_attempt_at",
            "memory_id",
        )
        read_only_fields = fields

    def get_subject(self, obj: ExecutionReport) -> str | None:
        link = getattr(obj, "subject_link", None)  # none: the reverse accessor raises
        return link.subject if link is not None else None

    def _capture(self, obj: ExecutionReport) -> ExecutionCapture | None:
        return getattr(obj, "capture", None)

    @extend_schema_field(ReportedErrorSerializer(allow_null=True))
    def get_error(self, obj: ExecutionReport) -> dict | None:
        if not obj.error_category:
            return None
        return {"category": obj.error_category, "message": obj.error_message}

    @extend_schema_field(
        serializers.ChoiceField(choices=ExecutionCapture.Status.choices, allow_null=True)
    )
    def get_capture_status(self, obj: ExecutionReport) -> str | None:
        capture = self._capture(obj)
        return capture.status if capture else None

    def get_capture_reason(self, obj: ExecutionReport) -> str:
        capture = self._capture(obj)
        return capture.reason if capture else ""

    def get_capture_strategy(self, obj: ExecutionReport) -> str:
        capture = self._capture(obj)
        return capture.strategy if capture else ""

    @extend_schema_field(serializers.ChoiceField(choices=CAPTURE_METHOD_CHOICES, allow_blank=True))
    def get_capture_method(self, obj: ExecutionReport) -> str:
        """What wrote the lesson: ``llm``, ``rule`` (no LLM configured), or empty."""
        capture = self._capture(obj)
        return capture.method if capture else ""

    def get_capture_attempts(self, obj: ExecutionReport) -> int:
        capture = self._capture(obj)
        return capture.attempts if capture else 0

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_capture_next_attempt_at(self, obj: ExecutionReport) -> str | None:
        capture = self._capture(obj)
        if capture is None or capture.next_attempt_at is None:
            return None
        return serializers.DateTimeField().to_representation(capture.next_attempt_at)

    @extend_schema_field(serializers.UUIDField(allow_null=True))
    def get_memory_id(self, obj: ExecutionReport) -> str | None:
        capture = self._capture(obj)
        return str(capture.memory_id) if capture and capture.memory_id else None


class LessonAppliedSerializer(Serializer):
    id = serializers.UUIDField()
    application_count = serializers.IntegerField()
    last_applied_at = serializers.DateTimeField()


class OrgSkillSerializer(Serializer):
    """An approved org skill of any source: its structure, the evidence it was approved on,
    its counters, and the entry agents retrieve (its ``procedure`` fact or org-pool memory)."""

    id = serializers.UUIDField(help_text="The skill's id: its fact's, or its memory's.")
    source = serializers.CharField(help_text="evolver | lesson-pool | operator")
    fact_id = serializers.UUIDField(allow_null=True, help_text="Its procedure fact (else null).")
    memory_id = serializers.UUIDField(
        allow_null=True, help_text="Its org-pool memory (a lesson-pool skill; else null)."
    )
    name = serializers.CharField()
    discovery = serializers.CharField()
    condition = serializers.CharField()
    action = serializers.CharField()
    rationale = serializers.CharField()
    steps = serializers.ListField(child=serializers.CharField())
    confidence = serializers.FloatField()
    pattern = serializers.CharField()
    report_count = serializers.IntegerField()
    agent_count = serializers.IntegerField()
    application_count = serializers.IntegerField()
    last_applied_at = serializers.DateTimeField(allow_null=True)
    approval_item = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()
    retracted_at = serializers.DateTimeField(
        source="retired_at",
        allow_null=True,
        help_text="When it left the org: its fact retracted, or its memory superseded.",
    )


class OperatorSkillWriteSerializer(Serializer):
    """A person's org skill, stated as fields."""

    # For the schema only: the service validates the body (operator_skills.OperatorSkillInput).

    name = serializers.CharField(
        required=False,
        help_text="Agent Skills name (a-z, 0-9, '-', at most 64); default: from `discovery`.",
    )
    discovery = serializers.CharField(help_text="What the skill is, in one sentence.")
    condition = serializers.CharField(help_text="When it applies.")
    action = serializers.CharField(help_text="What to do.")
    rationale = serializers.CharField(help_text="Why.")
    steps = serializers.ListField(child=serializers.CharField(), min_length=1)
    avoid = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Actions not to take."
    )
    task_type = serializers.CharField(required=False, help_text="Applies to this task type.")
    error_category = serializers.CharField(
        required=False, help_text="Applies to this error category."
    )
    tool = serializers.CharField(required=False, help_text="Applies when this tool fails.")


class OrgSkillListQuerySerializer(Serializer):
    include_retracted = serializers.BooleanField(required=False, default=False)
