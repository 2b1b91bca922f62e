"""Request and response shapes of the approval queue API."""

from __future__ import annotations

import json

from rest_framework import serializers

from orgmemory.approval_models import MAX_TTL, MIN_TTL, ApprovalItem
from synthorg.api.fields import JSONObjectField
from synthorg.api.serializers import ModelSerializer, Serializer


class ApprovalItemSerializer(ModelSerializer):
    requester_agent_id = serializers.IntegerField(read_only=True, allow_null=True)
    task_id = serializers.IntegerField(read_only=True, allow_null=True)
    decided_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = ApprovalItem
        fields = (
            "id",
            "action_type",
            "title",
            "description",
            "requested_by",
            "requester_agent_id",
            "risk_level",
            "source",
            "status",
            "created_at",
            "expires_at",
            "decided_at",
            "decided_by",
            "decision_reason",
            "task_id",
            "consumed_at",
            "evidence",
            "metadata",
        )
        read_only_fields = fields


JSON_MAX_CHARS = 100_000
JSON_TOO_LARGE = "must be at most 100000 characters as JSON."


def _bounded(value):
    # NUL characters and non-finite numbers are refused for every request by
    # synthorg.api.input_safety before a serializer runs.
    if len(json.dumps(value, ensure_ascii=False)) > JSON_MAX_CHARS:
        raise serializers.ValidationError(JSON_TOO_LARGE, code="max_length")
    return value


class ApprovalRequestSerializer(Serializer):
    action_type = serializers.CharField(max_length=100)
    title = serializers.CharField(max_length=200)
    description = serializers.CharField(max_length=10000, required=False, allow_blank=True)
    risk_level = serializers.ChoiceField(choices=ApprovalItem.RiskLevel.choices)
    evidence = JSONObjectField(required=False, default=dict, validators=[_bounded])
    metadata = JSONObjectField(required=False, default=dict, validators=[_bounded])
    ttl_seconds = serializers.IntegerField(
        required=False,
        min_value=int(MIN_TTL.total_seconds()),
        max_value=int(MAX_TTL.total_seconds()),
        help_text="Time to live; default depends on the action type (1 day for most).",
    )
    task_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=2**63 - 1
    )


class ApprovalRejectSerializer(Serializer):
    reason = serializers.CharField(max_length=4000, allow_blank=True)


class ApprovalApproveSerializer(Serializer):
    pass


class ApprovalListQuerySerializer(Serializer):
    status = serializers.ChoiceField(choices=ApprovalItem.Status.values, required=False)
    risk = serializers.ChoiceField(choices=ApprovalItem.RiskLevel.choices, required=False)
    action_type = serializers.CharField(max_length=100, required=False)
    source = serializers.CharField(max_length=100, required=False)
