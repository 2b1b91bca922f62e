"""Response serializers that share one set of fields per process say exactly what DRF's own
per-instance fields say (``synthorg.api.serializers.SharedFieldsRepresentation``)."""

from collections.abc import Mapping
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone
from rest_framework import serializers

from memory.core.models.memory import Memory
from memory.interfaces.api import serializers as s
from synthorg.api.serializers import SharedFieldsRepresentation
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def drf(serializer_class, instance):
    """What DRF itself makes of ``instance``: fresh fields, its own representation loop."""
    return serializers.Serializer.to_representation(serializer_class(), instance)


def test_memories_of_every_shape_serialize_as_drf_does(caller):
    now = timezone.now()
    plain = MemoryFactory(agent=caller.agent)
    shaped = MemoryFactory(
        agent=caller.agent,
        namespace="ops",
        category="episodic",
        content="Ünïcode ✓ content",
        context="from the incident review",
        source="task-9",
        confidence=0.25,
        tags=["deploy", "billing"],
        level="session",
        session_id="s-1",
        expires_at=now + timedelta(days=3),
        embedding_status=Memory.EmbeddingStatus.READY,
        embedder_id="minilm",
    )
    superseded = MemoryFactory(
        agent=caller.agent, superseded_at=now, superseded_by=shaped, is_shared=True
    )
    for memory in (plain, shaped, superseded):
        memory.refresh_from_db()
        shared = s.MemorySerializer(memory).data
        assert shared == drf(s.MemorySerializer, memory)
        assert shared["id"] == str(memory.pk)
    assert s.MemorySerializer(shaped).data["session_id"] == "s-1"
    assert s.MemorySerializer(plain).data["session_id"] is None
    assert s.MemorySerializer(superseded).data["superseded_by"] == str(shaped.pk)


def test_search_and_context_payloads_serialize_as_drf_does(caller):
    memory = MemoryFactory(agent=caller.agent, tags=["x"])
    hit = {
        "memory": memory,
        "relevance": 0.5,
        "recency": 0.25,
        "combined": 0.75,
        "dense_rank": 1,
        "sparse_rank": None,
        "is_shared": False,
    }
    payload = {"results": [hit, {**hit, "dense_rank": None, "sparse_rank": 2}], "degraded": []}
    shared = s.SearchResponseSerializer(payload).data
    expected = {
        "results": [
            {**drf(s.SearchHitSerializer, row), "memory": drf(s.MemorySerializer, memory)}
            for row in payload["results"]
        ],
        "degraded": [],
    }
    assert shared == expected
    assert "reembedding" not in shared  # optional: absent, not null
    assert shared["results"][1]["sparse_rank"] == 2
    progress = {"job": 3, "done": 5, "total": 20, "share_done": 0.25}
    during = s.SearchResponseSerializer({**payload, "reembedding": progress}).data
    assert during == {**expected, "reembedding": drf(s.ReembeddingSerializer, progress)}
    assert during["reembedding"] == progress

    prepared = SimpleNamespace(
        messages=[{"role": "system", "content": "fenced"}],
        included=[
            SimpleNamespace(key="m1", kind="memory", score=0.5, tokens=12, tiers="", reason="")
        ],
        dropped=[],
        tokens_used=12,
        token_budget=100,
        degraded=["dense"],
    )
    context = s.MemoryContextSerializer(prepared).data
    assert context == {
        "messages": [{"role": "system", "content": "fenced"}],
        "included": [
            {"id": "m1", "kind": "memory", "score": 0.5, "tokens": 12, "tiers": "", "reason": ""}
        ],
        "dropped": [],
        "tokens_used": 12,
        "token_budget": 100,
        "degraded": ["dense"],
    }  # strategy and tools are optional: absent, not null


def test_the_fields_are_built_once_per_class():
    class Probe(SharedFieldsRepresentation, serializers.Serializer):
        name = serializers.CharField()
        size = serializers.IntegerField(required=False)

    first = Probe.shared_readable_fields()
    assert Probe({"name": "a"}).data == {"name": "a"}
    assert Probe({"name": "b", "size": 3}).data == {"name": "b", "size": 3}
    assert Probe.shared_readable_fields() is first
    assert [field.field_name for field in first] == ["name", "size"]

    class Child(Probe):
        extra = serializers.BooleanField()

    assert [field.field_name for field in Child.shared_readable_fields()] == [
        "name",
        "size",
        "extra",
    ]
    assert Probe.shared_readable_fields() is first  # a subclass builds its own


def test_lookups_drf_treats_specially_serialize_as_drf_does():
    """The direct read of a one-attribute source hands every other case to DRF's lookup: a
    missing optional value (left out), a missing value with a default or null allowed, a
    method (called), a dotted source, ``source="*"`` and a Mapping that is not a dict."""

    class Inner(SharedFieldsRepresentation, serializers.Serializer):
        size = serializers.IntegerField()

    class Probe(SharedFieldsRepresentation, serializers.Serializer):
        name = serializers.CharField()
        optional = serializers.CharField(required=False)
        nullable = serializers.CharField(allow_null=True)
        defaulted = serializers.IntegerField(default=7)
        shout = serializers.CharField()
        size = serializers.IntegerField(source="inner.size")
        inner = Inner()
        whole = serializers.SerializerMethodField()

        def get_whole(self, instance) -> str:
            return type(instance).__name__

    class Thing:
        name = "a"
        inner = SimpleNamespace(size=3)

        def shout(self):
            return "A!"

    class Frozen(Mapping):
        def __init__(self, data):
            self.data = data

        def __getitem__(self, key):
            return self.data[key]

        def __iter__(self):
            return iter(self.data)

        def __len__(self):
            return len(self.data)

    row = {"name": "b", "shout": "B", "inner": {"size": 4}, "optional": "o"}
    for instance in (Thing(), row, Frozen(row)):
        assert Probe(instance).data == drf(Probe, instance)
    assert Probe(Thing()).data == {
        "name": "a",
        "nullable": None,
        "defaulted": 7,
        "shout": "A!",
        "size": 3,
        "inner": {"size": 3},
        "whole": "Thing",
    }
    assert Probe(Frozen(row)).data["whole"] == "Frozen"

    class Broken(SharedFieldsRepresentation, serializers.Serializer):
        name = serializers.CharField()

    with pytest.raises(AttributeError, match="Got AttributeError when attempting"):
        Broken(object()).data  # noqa: B018 - DRF's own error, not a silent gap
