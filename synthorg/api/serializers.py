"""Rules every API serializer follows, installed once for all of them.

:func:`install` (called from ``SynthorgConfig.ready``) makes every DRF serializer — ours,
other apps', nested ones — reject body fields it does not declare with a 400 naming each
field (code ``unknown_field``), instead of silently dropping them (a typo such as ``tagz``
used to publish a fact without tags into an append-only log). Query-string serializers
(``data=request.query_params``) are exempt: pagination and filter parameters share the
query string. A serializer that really accepts free-form keys sets
``allow_unknown_fields = True``.

:class:`ModelSerializer` is the base for model serializers: a model ``JSONField`` whose
default is ``dict`` becomes a :class:`~synthorg.api.fields.JSONObjectField` (documented and
validated as an object).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import models
from django.http import QueryDict
from rest_framework import serializers

from synthorg.api.fields import JSONObjectField

UNKNOWN_FIELD = "Unknown field: {field}."

_installed = False


def unknown_fields(serializer: serializers.Serializer, data) -> list[str]:
    if getattr(serializer, "allow_unknown_fields", False):
        return []
    if not isinstance(data, Mapping) or isinstance(data, QueryDict):
        return []
    return sorted(str(key) for key in data if key not in serializer.fields)


def reject_unknown_fields(serializer: serializers.Serializer, data) -> None:
    unknown = unknown_fields(serializer, data)
    if unknown:
        raise serializers.ValidationError(
            {
                name: [serializers.ErrorDetail(UNKNOWN_FIELD.format(field=name), "unknown_field")]
                for name in unknown
            }
        )


def install() -> None:
    """Make ``Serializer.to_internal_value`` reject unknown fields (idempotent)."""
    global _installed
    if _installed:
        return
    original = serializers.Serializer.to_internal_value

    def to_internal_value(self, data):
        reject_unknown_fields(self, data)
        return original(self, data)

    to_internal_value.__doc__ = original.__doc__
    serializers.Serializer.to_internal_value = to_internal_value
    _installed = True


class ModelSerializer(serializers.ModelSerializer):
    def build_standard_field(self, field_name, model_field):
        field_class, field_kwargs = super().build_standard_field(field_name, model_field)
        if isinstance(model_field, models.JSONField) and model_field.default is dict:
            field_class = JSONObjectField
        return field_class, field_kwargs
