"""The base classes every API serializer derives from.

:class:`Serializer` rejects body fields it does not declare with a 400 naming each field
(code ``unknown_field``) instead of silently dropping them (a typo such as ``tagz`` used to
publish a fact without tags into an append-only log). Query-string serializers
(``data=request.query_params``) are exempt: pagination and filter parameters share the query
string. A serializer that really accepts free-form keys sets ``allow_unknown_fields = True``.
Nested serializers used as fields must derive from it too; a test walks every serializer in
the project and holds that.

In a JSON body (the parser's :class:`~synthorg.api.parsers.JSONBody`, nested serializers
included) it also refuses a boolean or a string for a declared integer or float field
(codes ``int_type`` / ``float_type``): DRF's ``IntegerField`` parses ``"60"`` as 60, and
``ttl_seconds: "60"`` was accepted. Query strings and forms, which are text, are exempt
(:mod:`synthorg.strict_numbers` is the same rule for pydantic request models).

:class:`ModelSerializer` is the same rule for model serializers; in addition a model
``JSONField`` whose default is ``dict`` becomes a :class:`~synthorg.api.fields.JSONObjectField`
(documented and validated as an object).

:class:`SharedFieldsRepresentation` makes a response serializer build its fields once per
process instead of once per use.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from django.db import models
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.fields import Field, SkipField
from rest_framework.relations import PKOnlyObject

from synthorg.api.fields import JSONObjectField
from synthorg.api.parsers import JSONBody

UNKNOWN_FIELD = "Unknown field: {field}."
LOOSE_NUMBER = "Expected a JSON {expected}, got {got}."


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


def reject_loose_numbers(serializer: serializers.Serializer, data) -> None:
    body = getattr(serializer.root, "initial_data", None)
    if not isinstance(data, Mapping) or not isinstance(body, JSONBody):
        return
    errors = {}
    for name, field in serializer.fields.items():
        value = data.get(name)
        if field.read_only or not isinstance(value, bool | str):
            continue
        if isinstance(field, serializers.IntegerField):
            expected, code = "integer", "int_type"
        elif isinstance(field, serializers.FloatField):
            expected, code = "number", "float_type"
        else:
            continue
        got = "a boolean" if isinstance(value, bool) else "a string"
        errors[name] = [
            serializers.ErrorDetail(LOOSE_NUMBER.format(expected=expected, got=got), code)
        ]
    if errors:
        raise serializers.ValidationError(errors)


# The base classes carry comments, not docstrings: drf-spectacular describes a component by
# the first docstring in its class's MRO short of DRF's own classes, so a docstring here would
# become the description of every serializer that has none.
class Serializer(serializers.Serializer):
    # Refuses body fields it does not declare, and loose numbers (see the module docstring).
    allow_unknown_fields = False

    def to_internal_value(self, data):
        reject_unknown_fields(self, data)
        reject_loose_numbers(self, data)
        return super().to_internal_value(data)


class ModelSerializer(Serializer, serializers.ModelSerializer):
    # Serializer's rule for a model; a JSONField(default=dict) is a JSONObjectField.
    def build_standard_field(self, field_name, model_field):
        field_class, field_kwargs = super().build_standard_field(field_name, model_field)
        if isinstance(model_field, models.JSONField) and model_field.default is dict:
            field_class = JSONObjectField
        return field_class, field_kwargs


_shared_fields_lock = threading.Lock()

# The mixin goes before a DRF serializer in the bases; the type checker sees that serializer.
if TYPE_CHECKING:
    _SerializerMixinBase = serializers.Serializer
else:
    _SerializerMixinBase = object


class SharedFieldsRepresentation(_SerializerMixinBase):
    """Mixin for output serializers whose fields need no context: represent instances with
    one set of fields built per class and process, not a fresh set per serializer instance.

    DRF builds (``ModelSerializer``: introspects the model for) and deep-copies every field
    each time a serializer is instantiated, before a single value is converted: most of a
    search response's serialization cost (measured:
    docs/benchmarks/http.md#per-request-levers-measured-by-hand). The output is
    exactly DRF's (:meth:`to_representation` is DRF's loop over the same fields).

    Only for serializers whose representation reads nothing but the instance: the shared
    fields are bound to a prototype serializer without ``context``, ``instance`` or
    ``partial``, so ``SerializerMethodField`` methods, ``HyperlinkedRelatedField`` and the
    like see that prototype. Input validation still uses the serializer's own fields.
    """

    _shared_readable_fields: ClassVar[list[Field[Any, Any, Any, Any]]]
    _shared_plan: ClassVar[list[tuple[Field[Any, Any, Any, Any], str, Any]]]

    @classmethod
    def shared_readable_fields(cls) -> list[Field[Any, Any, Any, Any]]:
        fields = cls.__dict__.get("_shared_readable_fields")
        if fields is None:
            with _shared_fields_lock:
                fields = cls.__dict__.get("_shared_readable_fields")
                if fields is None:
                    prototype = cls()
                    fields = [f for f in prototype.fields.values() if not f.write_only]
                    cls._shared_plan = [(f, f.field_name, _plain_source(f)) for f in fields]
                    cls._shared_readable_fields = fields
        return fields

    def to_representation(self, instance):
        # DRF's loop (``Serializer.to_representation`` with ``Field.get_attribute``), with the
        # per-field work that depends only on the instance's type done once per instance: a
        # field whose source is one plain attribute reads it directly, ``source="*"`` is the
        # instance; anything DRF's lookup treats specially (a missing key or attribute, a
        # callable, ObjectDoesNotExist, a path) goes through DRF's own ``get_attribute``, so
        # the output and the errors are DRF's.
        plan = type(self).__dict__.get("_shared_plan")
        if plan is None:
            self.shared_readable_fields()
            plan = type(self).__dict__["_shared_plan"]
        by_key = isinstance(instance, Mapping)
        ret: dict[str, Any] = {}
        for field, name, source in plan:
            attribute = _UNREAD
            if source is _WHOLE:
                attribute = instance
            elif source is not None:
                try:
                    value = instance[source] if by_key else getattr(instance, source)
                except Exception:
                    pass  # DRF's lookup below says what a missing value means
                else:
                    if not callable(value):
                        attribute = value
            if attribute is _UNREAD:
                try:
                    attribute = field.get_attribute(instance)
                except SkipField:
                    continue
            check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
            ret[name] = None if check_for_none is None else field.to_representation(attribute)
        return ret


_UNREAD = object()
_WHOLE: Any = object()  # the source is the instance itself (``source="*"``)


def _plain_source(field: Field[Any, Any, Any, Any]) -> Any:
    """The one attribute or key ``field`` reads, ``_WHOLE`` for ``source="*"``, or ``None``
    (a dotted path, or a ``get_attribute`` that is not DRF's: a related field, say)."""
    if type(field).get_attribute is not Field.get_attribute:
        return None
    attrs = field.source_attrs
    if not attrs:
        return _WHOLE
    return attrs[0] if len(attrs) == 1 else None
