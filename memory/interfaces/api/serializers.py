"""Request and response shapes of the memory API.

Request serializers check types and bounds (so the OpenAPI schema states them); the domain
value objects (:mod:`memory.core.domain`) then normalise and apply the remaining rules.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory.core import domain
from memory.core.models.memory import Memory
from memory.procedural.selectors import attach_lessons, lesson_of, lesson_supersedes
from synthorg.api.fields import NamespaceField, SubjectField
from synthorg.api.serializers import ModelSerializer, Serializer, SharedFieldsRepresentation
from synthorg.enums import MemoryCategory

CATEGORY_CHOICES = Memory._meta.get_field("category").choices
CATEGORY_VALUES = [c.value for c in MemoryCategory]


def _tags_field(**kwargs):
    return serializers.ListField(
        child=serializers.CharField(max_length=domain.TAG_MAX_CHARS, allow_blank=True),
        max_length=domain.MAX_TAGS * 4,
        **kwargs,
    )


class SharedPublishSerializer(Serializer):
    content = serializers.CharField(
        max_length=domain.MEMORY_CONTENT_MAX_CHARS, trim_whitespace=False, allow_blank=True
    )
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES)
    namespace = NamespaceField(required=False)
    context = serializers.CharField(
        max_length=domain.MEMORY_CONTEXT_MAX_CHARS, required=False, allow_blank=True
    )
    source = serializers.CharField(
        max_length=domain.SOURCE_MAX_CHARS, required=False, allow_blank=True
    )
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    tags = _tags_field(required=False, help_text="Lower-cased and de-duplicated.")
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    supersedes = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        max_length=domain.MAX_SUPERSEDES,
        help_text="Ids of the caller's memories this one replaces; they drop out of retrieval.",
    )
    subject = SubjectField(
        required=False,
        allow_null=True,
        help_text="The end user this memory is about (see Subjects); erased with them.",
    )


class MemoryStoreSerializer(SharedPublishSerializer):
    created_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Past only; for importing old memories."
    )
    session_id = serializers.CharField(
        max_length=domain.SESSION_ID_MAX_CHARS,
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
    task_id = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        help_text=(
            "Scopes a `working` memory to a task of the company that has not ended: read "
            "only by searches and contexts naming the task, archived when it ends."
        ),
    )


class MemoryBatchStoreSerializer(Serializer):
    memories = serializers.ListField(
        child=MemoryStoreSerializer(), min_length=1, max_length=domain.MAX_BATCH
    )


STORE_WARNINGS_HELP = (
    "Present only when there is something to say; advisory, the memory is stored. "
    "`non_inferable_tag_missing`: the company injects only memories tagged `non-inferable` "
    "(`non_inferable_only`) and this one has no such tag."
)
CONTEXT_WARNINGS_HELP = (
    "Present only when there is something to say. `non_inferable_filter_emptied`: memories "
    "matched but none is tagged `non-inferable`, so the filter (`non_inferable_only`) left "
    "none to include."
)


class WarningSerializer(Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


def without_empty_warnings(data):
    """``warnings`` is in a response only when it holds something."""
    if not data.get("warnings"):
        data.pop("warnings", None)
    return data


class StoreResultSerializer(SharedFieldsRepresentation, Serializer):
    id = serializers.UUIDField(allow_null=True)
    stored = serializers.BooleanField(help_text="False when the agent's memory_level is 'none'.")
    deduplicated = serializers.BooleanField(
        help_text="True when the content nearly duplicated an existing memory (its id is returned)."
    )
    embedding_status = serializers.ChoiceField(
        choices=["ready", "pending"],
        allow_null=True,
        help_text="'pending' when the embedder failed; a background task fills it in.",
    )
    warnings = WarningSerializer(many=True, required=False, help_text=STORE_WARNINGS_HELP)

    def to_representation(self, instance):
        return without_empty_warnings(super().to_representation(instance))


class BatchStoreResultSerializer(SharedFieldsRepresentation, Serializer):
    results = StoreResultSerializer(many=True)
    created = serializers.IntegerField()
    deduplicated = serializers.IntegerField()


class MemoryUpdateSerializer(Serializer):
    content = serializers.CharField(
        max_length=domain.MEMORY_CONTENT_MAX_CHARS,
        trim_whitespace=False,
        allow_blank=True,
        required=False,
    )
    context = serializers.CharField(
        max_length=domain.MEMORY_CONTEXT_MAX_CHARS, required=False, allow_blank=True
    )
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES, required=False)
    namespace = serializers.CharField(max_length=domain.NAMESPACE_MAX_CHARS, required=False)
    source = serializers.CharField(
        max_length=domain.SOURCE_MAX_CHARS, required=False, allow_blank=True
    )
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    tags = _tags_field(required=False)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class ProceduralTiersSerializer(Serializer):
    """The activation and execution tiers of a procedural lesson (discovery is ``content``)."""

    skill_name = serializers.CharField()
    condition = serializers.CharField()
    action = serializers.CharField()
    rationale = serializers.CharField()
    execution_steps = serializers.ListField(child=serializers.CharField())
    origin = serializers.CharField(
        help_text="failure | success | propagated (an org-pool entry keeps its author's origin)"
    )
    source_report_id = serializers.UUIDField(source="report_id", allow_null=True)
    propagated_from = serializers.UUIDField(source="propagated_from_id", allow_null=True)
    requested_scope = serializers.CharField(
        help_text="The scope the proposer asked for (agent | role | department | org; empty "
        "for lessons stored before scopes); the memory's `scope` is the one it was delivered "
        "at after the company's propagation strategy bounded it."
    )
    org_approval_item = serializers.UUIDField(
        allow_null=True,
        help_text="The approval item that proposed this lesson to the org skill pool, or (on "
        "an org-pool entry) the item whose approval created it.",
    )
    supersedes = serializers.SerializerMethodField(
        help_text="Ids of the memories this lesson superseded (its `superseded_by` is on the "
        "memory)."
    )

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_supersedes(self, lesson) -> list[str]:
        return [str(memory_id) for memory_id in lesson_supersedes(lesson)]


class MemorySerializer(SharedFieldsRepresentation, ModelSerializer):
    agent_id = serializers.IntegerField(read_only=True)
    procedural = serializers.SerializerMethodField(
        help_text="A procedural lesson's activation and execution tiers; null otherwise."
    )
    project_id = serializers.IntegerField(read_only=True, allow_null=True)
    superseded_by = serializers.UUIDField(
        source="superseded_by_id", read_only=True, allow_null=True
    )
    session_id = serializers.SerializerMethodField()
    subject = serializers.SerializerMethodField(
        help_text="The end user this memory is about; null when none."
    )

    class Meta:
        model = Memory
        fields = (
            "id",
            "agent_id",
            "subject",
            "namespace",
            "category",
            "content",
            "context",
            "source",
            "confidence",
            "tags",
            "is_shared",
            "level",
            "session_id",
            "project_id",
            "task_id",
            "created_at",
            "updated_at",
            "expires_at",
            "superseded_at",
            "superseded_by",
            "embedding_status",
            "embedder_id",
            "scope",
            "application_count",
            "last_applied_at",
            "procedural",
        )
        read_only_fields = fields

    def get_session_id(self, memory: Memory) -> str | None:
        return memory.session_id or None

    def get_subject(self, memory: Memory) -> str | None:
        return memory.subject or None

    @extend_schema_field(ProceduralTiersSerializer(allow_null=True))
    def get_procedural(self, memory: Memory) -> dict | None:
        lesson = lesson_of(memory)
        return None if lesson is None else ProceduralTiersSerializer(lesson).data


class MemoryCountQuerySerializer(Serializer):
    category = serializers.ChoiceField(choices=CATEGORY_CHOICES, required=False)


class MemoryCountSerializer(Serializer):
    count = serializers.IntegerField()
    category = serializers.CharField(allow_null=True)


class SessionEndSerializer(Serializer):
    session_id = serializers.CharField()
    memories_purged = serializers.IntegerField()


class MemorySearchSerializer(Serializer):
    query = serializers.CharField(
        max_length=4000,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="Search text; absent or blank lists memories newest first.",
    )
    namespaces = serializers.ListField(child=NamespaceField(), required=False, max_length=50)
    categories = serializers.ListField(
        child=serializers.CharField(max_length=16),
        required=False,
        max_length=5,
        help_text="Any of: " + ", ".join(CATEGORY_VALUES) + ".",
    )
    tags = serializers.ListField(
        child=serializers.CharField(max_length=domain.TAG_MAX_CHARS, allow_blank=True),
        required=False,
        max_length=domain.MAX_TAGS,
        help_text="A memory must carry all of them.",
    )
    since = serializers.DateTimeField(required=False, allow_null=True, help_text="Inclusive.")
    until = serializers.DateTimeField(required=False, allow_null=True, help_text="Exclusive.")
    min_relevance = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        allow_null=True,
        help_text="Overrides the company's memory.retrieval.min_relevance for this query.",
    )
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    subject = SubjectField(
        required=False, allow_null=True, help_text="Only memories about this end user."
    )


class MemorySearchRequestSerializer(MemorySearchSerializer):
    task_id = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        help_text=(
            "Also search the working memories scoped to this task (without it, no "
            "task-scoped memory is searched)."
        ),
    )
    include_shared = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text="Also search the company's shared knowledge (default: company config).",
    )


class SharedSearchRequestSerializer(MemorySearchSerializer):
    exclude_self = serializers.BooleanField(
        default=False, help_text="Leave out the caller's own publications."
    )


class SearchHitSerializer(SharedFieldsRepresentation, Serializer):
    memory = MemorySerializer()
    relevance = serializers.FloatField()
    recency = serializers.FloatField()
    combined = serializers.FloatField()
    dense_rank = serializers.IntegerField(allow_null=True)
    sparse_rank = serializers.IntegerField(allow_null=True)
    is_shared = serializers.BooleanField()


class ReembeddingSerializer(SharedFieldsRepresentation, Serializer):
    job = serializers.IntegerField(help_text="The re-embedding job's id.")
    done = serializers.IntegerField(help_text="Rows (memories + org facts) re-embedded.")
    total = serializers.IntegerField(help_text="Rows the job re-embeds.")
    share_done = serializers.FloatField(help_text="done / total (0..1).")


DEGRADED_HELP = (
    '`"dense"` when the query could not be embedded (sparse leg only); `"reembedding"` while '
    "the company's vectors are being re-embedded for a new embedder (the dense leg sees only "
    "the rows already done, the sparse leg all of them; progress in `reembedding`); "
    '`"adapter"` when the company\'s active query adapter could not be loaded (the base query '
    'vector ranked). Context and tool search also: `"rerank"` / `"rerank_unavailable"` '
    'when the LLM re-ranking failed / has no LLM (the fused order is kept), `"routing"` / '
    '`"judgement"` when the hierarchical supervisor\'s LLM step failed (its rule was used), '
    '`"llm_budget_exceeded"` when the request\'s LLM time budget ran out.'
)
REEMBEDDING_HELP = "Present while a re-embedding job runs (see `degraded`)."
ADAPTER_HELP = (
    "Present when the company's fine-tuned query adapter (this checkpoint id) transformed the "
    "query vector of the dense leg (docs/operating/fine-tune.md)."
)


class SearchResponseSerializer(SharedFieldsRepresentation, Serializer):
    results = SearchHitSerializer(many=True)
    degraded = serializers.ListField(child=serializers.CharField(), help_text=DEGRADED_HELP)
    reembedding = ReembeddingSerializer(required=False, help_text=REEMBEDDING_HELP)
    adapter = serializers.UUIDField(required=False, help_text=ADAPTER_HELP)


def search_payload(
    hits, degraded, reembedding: dict | None = None, adapter: str | None = None
) -> dict:
    """What :class:`SearchResponseSerializer` serialises, from the pipeline's hits."""

    attach_lessons([hit.memory for hit in hits])  # tiers of procedural hits, one query
    return {
        "results": [
            {
                "memory": hit.memory,
                "relevance": hit.relevance,
                "recency": hit.recency,
                "combined": hit.combined,
                "dense_rank": hit.dense_rank,
                "sparse_rank": hit.sparse_rank,
                "is_shared": hit.is_shared,
            }
            for hit in hits
        ],
        "degraded": list(degraded),
        **({"reembedding": reembedding} if reembedding else {}),
        **({"adapter": adapter} if adapter else {}),
    }


class MemoryContextRequestSerializer(Serializer):
    query = serializers.CharField(max_length=4000, help_text="What the agent is about to do.")
    token_budget = serializers.IntegerField(
        min_value=0, max_value=1_000_000, help_text="Tokens the memory messages may use."
    )
    categories = serializers.ListField(
        child=serializers.CharField(max_length=16),
        required=False,
        max_length=5,
        help_text="Any of: " + ", ".join(CATEGORY_VALUES) + ".",
    )
    namespaces = serializers.ListField(child=NamespaceField(), required=False, max_length=50)
    subject = SubjectField(
        required=False,
        allow_null=True,
        help_text="Only memories about this end user (org facts are not per user).",
    )
    include_org = serializers.BooleanField(
        default=True,
        help_text="Include the org's core policies (pinned) and relevant extended facts.",
    )
    task_id = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        help_text=("Also retrieve the working memories scoped to this task (without it, none is)."),
    )


class ChatMessageSerializer(SharedFieldsRepresentation, Serializer):
    role = serializers.CharField()
    content = serializers.CharField()


class ContextEntrySerializer(SharedFieldsRepresentation, Serializer):
    id = serializers.CharField(source="key")
    kind = serializers.CharField()
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    tiers = serializers.CharField(
        help_text="Procedural lessons: `all` (three tiers) or `discovery` (the budget was "
        "too small for all); empty for other entries."
    )
    reason = serializers.CharField(
        help_text="Dropped entries: `budget` (it did not fit), or the contradiction that left "
        "it out (a core policy wins over any entry, an approved org skill over a lesson); "
        "empty for included entries."
    )


class RetrievalTraceSerializer(SharedFieldsRepresentation, Serializer):
    retriever = serializers.ChoiceField(choices=["flat", "hierarchical"])
    routing = serializers.CharField(
        required=False, help_text="Hierarchical: `llm` or `hints` (categories and cue words)."
    )
    workers = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Hierarchical: the workers that searched, in routing order.",
    )
    judgement = serializers.CharField(
        required=False,
        help_text="Hierarchical: `llm`, `score` (similarity threshold) or empty (no "
        "reflective retry configured).",
    )
    queries = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Hierarchical: the query, then each corrected query retried.",
    )
    retries = serializers.IntegerField(required=False)
    rerank = serializers.CharField(
        required=False,
        help_text="With query-specific re-ranking: `llm`, `cache` or empty (fused order kept; "
        "`degraded` says why).",
    )


class MemoryContextSerializer(SharedFieldsRepresentation, Serializer):
    messages = ChatMessageSerializer(many=True)
    included = ContextEntrySerializer(many=True)
    dropped = ContextEntrySerializer(many=True)
    tokens_used = serializers.IntegerField()
    token_budget = serializers.IntegerField()
    degraded = serializers.ListField(child=serializers.CharField(), help_text=DEGRADED_HELP)
    reembedding = ReembeddingSerializer(required=False, help_text=REEMBEDDING_HELP)
    retrieval = RetrievalTraceSerializer(
        required=False,
        help_text="Present when the company configures the hierarchical retriever or the "
        "query-specific re-ranking: what the retrieval did.",
    )
    strategy = serializers.CharField(
        required=False, help_text="Present for the tool_based and self_editing strategies."
    )
    tools = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The strategy's tool definitions (OpenAI function-calling format).",
    )
    warnings = WarningSerializer(many=True, required=False, help_text=CONTEXT_WARNINGS_HELP)

    def to_representation(self, instance):
        return without_empty_warnings(super().to_representation(instance))


def context_payload(prepared, strategy) -> dict:
    """The body ``/memories/context`` answers (the console's preview shows the same): the
    prepared context, ``reembedding`` only while a job runs, and the strategy and its tools
    when the strategy is not ``context``."""
    payload = dict(MemoryContextSerializer(prepared).data)
    if payload.get("reembedding") is None:
        payload.pop("reembedding", None)  # present only while a job runs
    if payload.get("retrieval") is None:
        payload.pop("retrieval", None)  # present only beyond a flat search
    if strategy.strategy_name != "context":
        payload["strategy"] = strategy.strategy_name
        payload["tools"] = list(strategy.get_tool_definitions())
    return payload


class MemoryRevisionSerializer(SharedFieldsRepresentation, Serializer):
    """One correction of a memory: the text it replaced, and who made it, when and why (its
    ``memory.corrected`` audit entry)."""

    id = serializers.UUIDField()
    previous_content = serializers.CharField(help_text="The text this correction replaced.")
    reason = serializers.SerializerMethodField(help_text="Why the text was corrected.")
    corrected_by = serializers.SerializerMethodField(
        help_text="Username of the human who corrected it (corrections are human-only)."
    )
    created_at = serializers.DateTimeField(help_text="When the text was replaced.")
    audit_entry_id = serializers.IntegerField(
        help_text="The correction's audit entry (which keeps only a SHA-256 of the text)."
    )

    def get_reason(self, revision) -> str:
        return revision.audit_entry.details.get("reason", "")

    def get_corrected_by(self, revision) -> str | None:
        user = revision.audit_entry.actor_user
        return None if user is None else user.get_username()
