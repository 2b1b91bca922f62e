"""Input fields shared by every API app, so each rule lives in one place.

* :class:`JSONObjectField`: a JSON value documented and validated as an object (``{}``);
  an array, string or number is a 400, not a ``TypeError`` in a service.
* :class:`UtcDateTimeFilter`: a django-filter datetime filter that converts its value to
  UTC. PostgreSQL accepts UTC offsets up to ±15:59 only, while ISO-8601 parsing accepts
  any offset below 24 h; converting first makes every accepted value storable, and a value
  that leaves the representable range when converted is a 400.
* :class:`YearMonthField`: ``YYYY-MM`` whose month and the following one are representable.
"""

from __future__ import annotations

import json
from datetime import UTC, date

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from synthorg.subjects import subject_problem

NOT_AN_OBJECT = "Expected a JSON object, got {kind}."
DATETIME_OUT_OF_RANGE = "Date/time is out of the supported range once converted to UTC."
INVALID_MONTH = "Expected a month as YYYY-MM between 0001-01 and 9998-12."

_JSON_KINDS = {
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


@extend_schema_field({"type": "object", "additionalProperties": True})
class JSONObjectField(serializers.JSONField):
    default_error_messages = {"not_an_object": NOT_AN_OBJECT}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            self.fail("not_an_object", kind=_JSON_KINDS.get(type(value), type(value).__name__))
        return value


class UtcIsoDateTimeField(IsoDateTimeField):
    def to_python(self, value):
        result = super().to_python(value)
        if result is None or result.tzinfo is None:
            return result
        try:
            return result.astimezone(UTC)
        except OverflowError as exc:
            raise forms.ValidationError(DATETIME_OUT_OF_RANGE, code="out_of_range") from exc


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


@extend_schema_field({"type": "string", "pattern": r"^\d{4}-(0[1-9]|1[0-2])$"})
class YearMonthField(serializers.Field):
    """``YYYY-MM`` → the first day of that month (a :class:`~datetime.date`)."""

    default_error_messages = {"invalid": INVALID_MONTH}

    def to_internal_value(self, data):
        if not isinstance(data, str) or len(data) != 7 or data[4] != "-":
            self.fail("invalid")
        year, month = data[:4], data[5:]
        if not (year.isdigit() and month.isdigit() and year.isascii() and month.isascii()):
            self.fail("invalid")
        # The month after must exist too: a month's range ends where the next one begins.
        if not (1 <= int(year) <= 9998 and 1 <= int(month) <= 12):
            self.fail("invalid")
        return date(int(year), int(month), 1)

    def to_representation(self, value):
        return f"{value:%Y-%m}"


NAMESPACE_INVALID = (
    "A namespace is a non-blank name (at most {max_chars} characters) or a tuple of names "
    "(an array of 1–{max_parts} strings{json_hint})."
)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": 100},
            {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 6},
        ],
        "description": (
            'A flat name, or a tuple such as `["org", "<company>", "<agent>"]` rendered '
            "through the company's `memory.namespace_templates`."
        ),
    }
)
class NamespaceField(serializers.Field):
    """A namespace as an agent names it: a flat string (as always) or a tuple (a JSON array
    of strings; in a query string, the array as JSON text: ``["user","u-1"]``). The value
    goes to the service unrendered: a ``str`` or a ``tuple`` (rendered there, with the
    company's templates)."""

    MAX_CHARS = 100
    MAX_PARTS = 6

    def __init__(self, *, json_text: bool = False, **kwargs):
        self.json_text = json_text
        self._flat = serializers.CharField(max_length=self.MAX_CHARS)
        super().__init__(**kwargs)

    def _invalid(self):
        hint = "; in a query string as JSON text" if self.json_text else ""
        raise serializers.ValidationError(
            NAMESPACE_INVALID.format(
                max_chars=self.MAX_CHARS, max_parts=self.MAX_PARTS, json_hint=hint
            ),
            code="namespace_invalid",
        )

    def to_internal_value(self, data):
        if self.json_text and isinstance(data, str) and data.startswith("["):
            try:
                data = json.loads(data)
            except ValueError:
                self._invalid()
        if isinstance(data, str):  # a flat name: CharField's rules and codes, as before
            return self._flat.run_validation(data)
        if (
            isinstance(data, list)
            and 1 <= len(data) <= self.MAX_PARTS
            and all(isinstance(part, str) for part in data)
        ):
            return tuple(data)
        self._invalid()

    def to_representation(self, value):
        return value


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": 128,
        "description": (
            "The end user this is about (an opaque id of your choosing, e.g. `user-42`): "
            "1–128 characters, no control characters, no `/`, no surrounding whitespace."
        ),
    }
)
class SubjectField(serializers.CharField):
    """An end-user id (:mod:`synthorg.subjects`); code ``subject_invalid`` when malformed.
    Never trimmed: ``" u1"`` is refused rather than silently made ``"u1"``."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("max_length", None)
        super().__init__(**kwargs)

    def run_validation(self, data=serializers.empty):
        if data == "":  # CharField would answer ``blank``; one code for every bad subject
            raise serializers.ValidationError(subject_problem(data), code="subject_invalid")
        return super().run_validation(data)

    def to_internal_value(self, data):
        problem = subject_problem(data)
        if problem is not None:
            raise serializers.ValidationError(problem, code="subject_invalid")
        return data
