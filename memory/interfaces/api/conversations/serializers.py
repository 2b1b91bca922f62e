"""Request and response shapes of the conversation ingestion API.

Unknown body fields are rejected by the base serializers (``synthorg.api.serializers``); the
query serializers here get ``query_params.dict()``, so unknown query parameters are
rejected too (each list endpoint declares its pagination parameters).
"""

from __future__ import annotations

from rest_framework import serializers

from memory.core.domain import parse_request
from memory.ingestion import domain
from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRequest,
    DreamRun,
    ExtractedFact,
    ExtractionRun,
)
from synthorg.api.fields import SubjectField
from synthorg.api.serializers import ModelSerializer, Serializer

ROLE_CHOICES = [(r.value, r.value) for r in domain.MessageRole]


class MessageInSerializer(Serializer):
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    content = serializers.CharField(
        max_length=domain.MESSAGE_CONTENT_MAX_CHARS, trim_whitespace=False
    )
    name = serializers.CharField(
        max_length=domain.MESSAGE_NAME_MAX_CHARS, required=False, allow_blank=True
    )
    created_at = serializers.DateTimeField(required=False, allow_null=True)

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError(domain.CONTENT_BLANK, code="blank")
        return value


class FlushSerializer(Serializer):
    messages = MessageInSerializer(
        many=True, allow_empty=False, max_length=domain.MAX_FLUSH_MESSAGES
    )
    session_id = serializers.CharField(
        max_length=200,
        required=False,
        allow_null=True,
        help_text="Required when the agent's memory_level is 'session'.",
    )
    project_id = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        help_text="Required when the agent's memory_level is 'project' (an open project).",
    )
    subject = SubjectField(
        required=False,
        allow_null=True,
        help_text=(
            "The end user the conversation is with, fixed by its first flush; the memories "
            "extracted from it carry it (see Subjects)."
        ),
    )


class FlushResultSerializer(Serializer):
    conversation_id = serializers.CharField()
    stored = serializers.BooleanField()
    accepted = serializers.IntegerField()
    message_ids = serializers.ListField(child=serializers.IntegerField())
    first_seq = serializers.IntegerField(allow_null=True)
    last_seq = serializers.IntegerField(allow_null=True)
    extraction_due_at = serializers.DateTimeField(allow_null=True)
    subject = serializers.CharField(allow_null=True)


class ConversationSerializer(ModelSerializer):
    conversation_id = serializers.CharField(source="external_id")
    project_id = serializers.IntegerField(allow_null=True)
    subject = serializers.SerializerMethodField(help_text="The end user; null when none.")

    class Meta:
        model = Conversation
        fields = [
            "conversation_id",
            "subject",
            "level",
            "session_id",
            "project_id",
            "message_count",
            "extracted_through_seq",
            "verbatim_through_seq",
            "pending_tokens",
            "extraction_due_at",
            "summary_through_seq",
            "summary_method",
            "summary_error",
            "created_at",
            "updated_at",
            "last_message_at",
        ]

    def get_subject(self, conversation: Conversation) -> str | None:
        return conversation.subject or None


class ConversationMessageSerializer(ModelSerializer):
    conversation_id = serializers.CharField(source="conversation.external_id")

    class Meta:
        model = ConversationMessage
        fields = [
            "id",
            "conversation_id",
            "seq",
            "role",
            "content",
            "name",
            "created_at",
            "received_at",
            "token_count",
        ]


class MessageListQuerySerializer(Serializer):
    q = serializers.CharField(required=False, max_length=1000)
    role = serializers.ChoiceField(choices=ROLE_CHOICES, required=False)
    after_seq = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    before_seq = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    cursor = serializers.CharField(required=False)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=500)


class ExtractionRunSerializer(ModelSerializer):
    # the durable job's fields under the names the API has always used
    error = serializers.CharField(source="reason", read_only=True)
    finished_at = serializers.DateTimeField(source="completed_at", read_only=True, allow_null=True)

    class Meta:
        model = ExtractionRun
        fields = [
            "id",
            "status",
            "trigger",
            "first_seq",
            "last_seq",
            "message_count",
            "facts_proposed",
            "added",
            "skipped",
            "superseded",
            "below_confidence",
            "ignored_supersedes",
            "model",
            "method",
            "input_tokens",
            "output_tokens",
            "error",
            "attempts",
            "next_attempt_at",
            "created_at",
            "finished_at",
        ]
        read_only_fields = ["attempts", "next_attempt_at"]


class ExtractedFactSerializer(ModelSerializer):
    class Meta:
        model = ExtractedFact
        fields = [
            "position",
            "content",
            "category",
            "confidence",
            "tags",
            "decision",
            "memory_id",
            "superseded_ids",
            "ignored_supersedes",
            "message_ids",
        ]


class ExtractionRunDetailSerializer(ExtractionRunSerializer):
    facts = ExtractedFactSerializer(many=True, read_only=True)

    class Meta(ExtractionRunSerializer.Meta):
        fields = [*ExtractionRunSerializer.Meta.fields, "facts"]


class PageQuerySerializer(Serializer):
    cursor = serializers.CharField(required=False)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=500)


class ConversationListQuerySerializer(PageQuerySerializer):
    subject = SubjectField(required=False)


class ContextRequestSerializer(Serializer):
    token_budget = serializers.IntegerField(min_value=1, max_value=1_000_000)


class ContextMessageSerializer(Serializer):
    role = serializers.CharField()
    content = serializers.CharField()


class ContextResultSerializer(Serializer):
    conversation_id = serializers.CharField()
    summary = serializers.CharField(allow_blank=True)
    summary_through_seq = serializers.IntegerField()
    summary_truncated = serializers.BooleanField()
    messages = ConversationMessageSerializer(many=True)
    first_included_seq = serializers.IntegerField(allow_null=True)
    omitted_messages = serializers.IntegerField()
    tokens_used = serializers.IntegerField()
    token_budget = serializers.IntegerField()
    chat = ContextMessageSerializer(many=True)


class JournalDaySerializer(Serializer):
    day = serializers.DateField()
    entries = serializers.IntegerField()
    url = serializers.CharField()


class DreamRunSerializer(ModelSerializer):
    class Meta:
        model = DreamRun
        fields = [
            "id",
            "status",
            "trigger",
            "input_hash",
            "journal_from",
            "journal_to",
            "journal_entries",
            "previous_core_id",
            "core_memory_id",
            "diary",
            "model",
            "method",
            "error",
            "created_at",
        ]


class DreamRequestSerializer(ModelSerializer):
    method = serializers.ChoiceField(
        choices=["llm", "extractive"],
        help_text=(
            "How the dream will run: `llm` when an LLM is configured (under the company's "
            "LLM slots), `extractive` without one (the previous core and the journal's key "
            "facts and anchors, kept verbatim)."
        ),
    )
    run = DreamRunSerializer(
        allow_null=True, help_text="The dream run it produced, once it ran (`status: ran`)."
    )

    class Meta:
        model = DreamRequest
        fields = [
            "id",
            "status",
            "method",
            "via",
            "deferrals",
            "attempts",
            "reason",
            "next_attempt_at",
            "requested_at",
            "run",
        ]


def cursor_page(serializer_class, name: str):
    """The documented shape of a keyset page: ``{next, previous, results: [...]}``."""
    from drf_spectacular.utils import inline_serializer

    return inline_serializer(
        name=name,
        fields={
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )


def messages_in(items) -> list[domain.MessageIn]:
    """The validated ``messages`` of a flush as the service takes them (an omitted optional
    member is left unset; errors name ``messages.<index>``)."""
    return [
        parse_request(
            domain.MessageIn,
            {k: v for k, v in item.items() if v is not None},
            prefix=f"messages.{index}",
        )
        for index, item in enumerate(items)
    ]
