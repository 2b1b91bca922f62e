"""Every serializer in the project derives from :mod:`synthorg.api.serializers`' bases.

DRF's own ``Serializer`` silently drops body fields it does not declare; ours refuses them
(400, code ``unknown_field``). The walk below imports every project module and fails on any
serializer, nested or top-level, that was built on DRF's classes directly.
"""

import importlib
import pkgutil

from django.http import QueryDict
from rest_framework import serializers

from synthorg.api.serializers import ModelSerializer, Serializer

PROJECT_PACKAGES = ("synthorg", "persistence", "orgmemory", "memory")
# Process entry points (they configure a server or set up Django at import) and migrations
# define no serializer.
SKIPPED = ("synthorg.asgi", "synthorg.wsgi", "synthorg.gunicorn_conf", "synthorg.settings")


def project_modules():
    for package in PROJECT_PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name not in SKIPPED and ".migrations" not in info.name:
                yield info.name


def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def project_subclasses(cls):
    for name in project_modules():
        importlib.import_module(name)
    return {c for c in subclasses(cls) if c.__module__.split(".")[0] in PROJECT_PACKAGES}


def not_derived_from(base, classes):
    return sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, base))


def test_every_project_serializer_derives_from_the_base():
    found = project_subclasses(serializers.Serializer)
    names = {c.__name__ for c in found}
    # The walk reaches every app, nested serializers included (ToolCallSerializer is a field).
    assert {
        "FactWriteSerializer",
        "MemorySerializer",
        "ToolCallSerializer",
        "CompanySerializer",
        "ApprovalItemSerializer",
        "MessageInSerializer",
    } <= names
    assert not_derived_from(Serializer, found) == []


def test_every_project_model_serializer_derives_from_the_model_base():
    found = project_subclasses(serializers.ModelSerializer)
    assert {"MemorySerializer", "LogEntrySerializer", "AgentSerializer"} <= {
        c.__name__ for c in found
    }
    assert not_derived_from(ModelSerializer, found) == []


def test_the_check_catches_a_serializer_built_on_drf_directly():
    class Plain(serializers.Serializer):
        name = serializers.CharField()

    class Strict(Serializer):
        name = serializers.CharField()

    body = {"name": "a", "tagz": ["x"]}
    assert Plain(data=body).is_valid()  # what the base exists to prevent
    assert not_derived_from(Serializer, [Plain, Strict]) == [f"{__name__}.{Plain.__qualname__}"]


def test_the_base_refuses_unknown_body_fields_nested_ones_too():
    class Inner(Serializer):
        name = serializers.CharField()

    class Outer(Serializer):
        inner = Inner()
        items = Inner(many=True)

    serializer = Outer(
        data={"inner": {"name": "a", "x": 1}, "items": [{"name": "b", "y": 2}], "z": 3}
    )
    assert not serializer.is_valid()
    assert serializer.errors == {"z": ["Unknown field: z."]}
    assert serializer.errors["z"][0].code == "unknown_field"
    nested = Outer(data={"inner": {"name": "a", "x": 1}, "items": [{"name": "b", "y": 2}]})
    assert not nested.is_valid()
    assert nested.errors == {
        "inner": {"x": ["Unknown field: x."]},
        "items": {0: {"y": ["Unknown field: y."]}},
    }


def test_query_strings_and_opted_out_serializers_take_other_keys():
    class Query(Serializer):
        name = serializers.CharField()

    class FreeForm(Serializer):
        allow_unknown_fields = True
        name = serializers.CharField()

    query = Query(data=QueryDict("name=a&page=2&anything=1"))
    assert query.is_valid(), query.errors
    assert query.validated_data == {"name": "a"}
    free = FreeForm(data={"name": "a", "extra": 1})
    assert free.is_valid(), free.errors
    assert free.validated_data == {"name": "a"}


def test_the_model_base_types_a_dict_json_field_as_an_object():
    from persistence.models import Message
    from synthorg.api.fields import JSONObjectField

    class MessageSerializer(ModelSerializer):
        class Meta:
            model = Message
            fields = ("metadata",)

    assert isinstance(MessageSerializer().fields["metadata"], JSONObjectField)
    refused = MessageSerializer(data={"metadata": {}, "owner": 1})
    assert not refused.is_valid()
    assert refused.errors == {"owner": ["Unknown field: owner."]}
