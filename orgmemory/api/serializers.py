from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from orgmemory.domain import FACT_CONTENT_MAX_CHARS, MAX_TAGS
from orgmemory.models import OperationLogEntry, WriteAccessRequest
from synthorg.api.serializers import ModelSerializer, Serializer
from synthorg.enums import OrgFactCategory

# The model's (value, label) pairs, so every category enum in the schema is the same one.
CATEGORY_CHOICES = OperationLogEntry._meta.get_field("category").choices
CATEGORY_VALUES = [c.value for c in OrgFactCategory]


class CategoryNameField(serializers.CharField):
    """A category name inside a list (a plain string in the schema, validated here)."""

    default_error_messages = {"invalid_choice": '"{input}" is not a valid choice.'}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in CATEGORY_VALUES:
            self.fail("invalid_choice", input=value)
        return value


class AuthorSerializer(Serializer):
    is_human = serializers.BooleanField()
    agent_id = serializers.CharField(allow_null=True)
    seniority = serializers.CharField(allow_null=True)
    autonomy_level = serializers.CharField(allow_null=True)


class FactSerializer(Serializer):
    """A fact as it stands now (or at ``as_of``)."""

    fact_id = serializers.UUIDField()
    version = serializers.IntegerField()
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    author = AuthorSerializer()
    author_user = serializers.CharField(allow_null=True)
    approved_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    retracted_at = serializers.DateTimeField(allow_null=True)


class ScoredFactSerializer(FactSerializer):
    score = serializers.FloatField(allow_null=True)


class FactQueryResultSerializer(Serializer):
    as_of = serializers.DateTimeField(allow_null=True)
    results = ScoredFactSerializer(many=True)


class PolicySerializer(Serializer):
    id = serializers.CharField()
    source = serializers.ChoiceField(choices=["config", "fact"])
    content = serializers.CharField()
    fact_id = serializers.UUIDField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)


class _TagsField(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(
            child=serializers.CharField(max_length=64),
            max_length=MAX_TAGS,
            required=False,
            **{"default": list, **kwargs},
        )


class FactWriteSerializer(Serializer):
    content = serializers.CharField(max_length=FACT_CONTENT_MAX_CHARS)
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    tags = _TagsField(
        default=None,
        help_text="A new fact: default none. A new version: omit to keep the current tags.",
    )
    fact_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="Set to publish a new version of this fact."
    )
    expected_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="The version you read; a different current version is a 409.",
    )


class FactRetractSerializer(Serializer):
    expected_version = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class FactQuerySerializer(Serializer):
    context = serializers.CharField(
        required=False, allow_null=True, max_length=FACT_CONTENT_MAX_CHARS, default=None
    )
    categories = serializers.ListField(
        child=CategoryNameField(),
        required=False,
        help_text="Any of: " + ", ".join(CATEGORY_VALUES) + ". Default: all but core_policy.",
        allow_null=True,
        allow_empty=False,
        default=None,
    )
    limit = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=100)
    as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)


class AsOfQuerySerializer(Serializer):
    as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)


class FactListQuerySerializer(AsOfQuerySerializer):
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES, required=False)


class LogEntrySerializer(ModelSerializer):
    author = serializers.SerializerMethodField()
    author_user = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    approved_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    write_request_id = serializers.UUIDField(allow_null=True, read_only=True)

    class Meta:
        model = OperationLogEntry
        fields = (
            "operation_id",
            "fact_id",
            "version",
            "operation_type",
            "content",
            "category",
            "tags",
            "author",
            "author_user",
            "approved_by",
            "write_request_id",
            "timestamp",
        )

    @extend_schema_field(AuthorSerializer)
    def get_author(self, entry) -> dict:
        return AuthorSerializer(
            {
                "is_human": entry.author_is_human,
                "agent_id": None if entry.author_agent_id is None else str(entry.author_agent_id),
                "seniority": entry.author_seniority,
                "autonomy_level": entry.author_autonomy_level,
            }
        ).data


class WriteRequestSerializer(ModelSerializer):
    requester_id = serializers.IntegerField(read_only=True)
    requester_seniority = serializers.CharField(read_only=True)
    decided_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    published_operation_id = serializers.UUIDField(allow_null=True, read_only=True)

    class Meta:
        model = WriteAccessRequest
        fields = (
            "id",
            "requester_id",
            "requester_seniority",
            "fact_id",
            "category",
            "content",
            "tags",
            "justification",
            "status",
            "created_at",
            "decided_at",
            "decided_by",
            "decision_reason",
            "published_operation_id",
        )


class WriteRequestFileSerializer(FactWriteSerializer):
    tags = _TagsField()
    justification = serializers.CharField(max_length=4000)
    expected_version = None


class WriteRequestListQuerySerializer(Serializer):
    status = serializers.ChoiceField(choices=WriteAccessRequest.Status.values, required=False)


class WriteRequestDecideSerializer(Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    reason = serializers.CharField(required=False, allow_blank=True, max_length=4000, default="")
