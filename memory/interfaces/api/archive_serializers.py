"""Serializers of the archive endpoints."""

from __future__ import annotations

from rest_framework import serializers

from memory.core.models.maintenance import ArchivedMemory
from memory.interfaces.api.serializers import CATEGORY_CHOICES
from synthorg.api.serializers import ModelSerializer, Serializer


class ArchiveSearchQuerySerializer(Serializer):
    q = serializers.CharField(required=False, allow_blank=True, max_length=1000)
    namespace = serializers.ListField(child=serializers.CharField(max_length=100), required=False)
    category = serializers.ListField(
        child=serializers.ChoiceField(choices=CATEGORY_CHOICES), required=False
    )
    tag = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    include_restored = serializers.BooleanField(required=False, default=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=10)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        since, until = attrs.get("since"), attrs.get("until")
        if since and until and since > until:
            raise serializers.ValidationError({"until": "until must not be before since."})
        return attrs


class ArchivedMemorySerializer(ModelSerializer):
    agent_id = serializers.IntegerField(read_only=True)
    # Documented as any JSON, as it was before this serializer moved onto ModelSerializer
    # (which would type it ``object``): the OpenAPI schema stays unchanged.
    metadata = serializers.JSONField(read_only=True)

    class Meta:
        model = ArchivedMemory
        fields = (
            "id",
            "original_id",
            "agent_id",
            "namespace",
            "category",
            "content",
            "context",
            "source",
            "confidence",
            "tags",
            "metadata",
            "mode",
            "created_at",
            "archived_at",
            "summary_memory_id",
            "restored_at",
            "restored_memory_id",
        )
        read_only_fields = fields


class ArchiveSearchResultSerializer(Serializer):
    count = serializers.IntegerField()
    results = ArchivedMemorySerializer(many=True)


class ArchiveRestoreResultSerializer(Serializer):
    archive_id = serializers.UUIDField()
    original_id = serializers.UUIDField()
    memory_id = serializers.UUIDField()
    restored_at = serializers.DateTimeField()
