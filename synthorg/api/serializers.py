"""Serializer bases shared by every app's API."""

from __future__ import annotations

from rest_framework import serializers

UNKNOWN_FIELDS = "Unknown field(s): {fields}."


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare instead of silently ignoring them."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: [UNKNOWN_FIELDS.format(fields=name)] for name in unknown},
                    code="unknown_field",
                )
        return super().to_internal_value(data)
