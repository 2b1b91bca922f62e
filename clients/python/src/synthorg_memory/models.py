"""The API's responses as pydantic models.

Fields mirror the served OpenAPI schema (a test in the SynthOrg Memory repository checks every
field here against it). Unknown fields are kept (``extra="allow"``), so a client survives the
API adding members; enumerations are plain strings for the same reason. Ids are strings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


# --- memories ---------------------------------------------------------------------------


class Warning(Model):
    code: str
    message: str


class StoreResult(Model):
    """What a store (or a shared publish) did: ``id`` is ``None`` when nothing was stored
    (the agent's memory level is ``none``); a near duplicate answers the existing id."""

    id: str | None
    stored: bool
    deduplicated: bool
    embedding_status: str | None
    warnings: list[Warning] = Field(default_factory=list)


class Memory(Model):
    id: str
    agent_id: int
    #: the end user the memory is about (``None``: nobody in particular)
    subject: str | None = None
    namespace: str
    category: str
    content: str
    context: str
    source: str
    confidence: float
    tags: list[str]
    is_shared: bool
    level: str
    session_id: str | None
    project_id: int | None
    #: the task a working memory is scoped to (``None``: not scoped)
    task_id: int | None = None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    superseded_at: datetime | None
    superseded_by: str | None
    embedding_status: str
    embedder_id: str
    scope: str
    application_count: int
    last_applied_at: datetime | None
    #: a procedural lesson's tiers (skill_name, condition, action, …); ``None`` otherwise
    procedural: dict[str, Any] | None


class StoredMemory(Memory):
    """The memory a store wrote (or, deduplicated, the one it matched), read back, with what
    the store said about it."""

    stored: bool = True
    deduplicated: bool = False
    warnings: list[Warning] = Field(default_factory=list)


class SearchHit(Model):
    memory: Memory
    relevance: float
    recency: float
    combined: float
    dense_rank: int | None
    sparse_rank: int | None
    is_shared: bool

    @property
    def score(self) -> float:
        """The hit's fused score (``combined``), the one results are ordered by."""
        return self.combined


class Reembedding(Model):
    job: int
    done: int
    total: int
    share_done: float


class SearchResponse(Model):
    results: list[SearchHit]
    #: the retrieval legs that failed and were skipped (``dense``, ``sparse``, …)
    degraded: list[str]
    reembedding: Reembedding | None = None
    adapter: str | None = None


class ChatMessage(Model):
    role: str
    content: str


class ContextEntry(Model):
    id: str
    kind: str
    score: float
    tokens: int
    tiers: str
    reason: str


class MemoryContext(Model):
    """Chat messages to put before the prompt, within the token budget, and what made it."""

    messages: list[ChatMessage]
    included: list[ContextEntry]
    dropped: list[ContextEntry]
    tokens_used: int
    token_budget: int
    degraded: list[str]
    reembedding: Reembedding | None = None
    retrieval: dict[str, Any] | None = None
    strategy: str | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[Warning] = Field(default_factory=list)


class MemoryCount(Model):
    count: int
    category: str | None


class MemoryRevision(Model):
    """One correction of a memory: the text it replaced, who, when and why."""

    id: str
    previous_content: str
    reason: str
    corrected_by: str | None
    created_at: datetime
    audit_entry_id: int


# --- org memory -------------------------------------------------------------------------


class Author(Model):
    is_human: bool
    agent_id: str | None
    seniority: str | None
    autonomy_level: str | None


class Fact(Model):
    fact_id: str
    version: int
    category: str
    content: str
    tags: list[str]
    author: Author
    author_user: str | None
    approved_by: str | None
    created_at: datetime
    updated_at: datetime
    retracted_at: datetime | None


class ScoredFact(Fact):
    score: float | None


class FactQueryResult(Model):
    as_of: datetime | None
    results: list[ScoredFact]


class LogEntry(Model):
    """One operation of a fact's log (a version, or its retraction)."""

    operation_id: str
    fact_id: str
    version: int
    operation_type: str
    content: str | None = None
    category: str
    tags: list[str] = Field(default_factory=list)
    author: Author | None = None
    author_user: str | None
    approved_by: str | None
    write_request_id: str | None
    timestamp: datetime


class Policy(Model):
    id: str
    source: str
    content: str
    fact_id: str | None
    version: int | None
    created_at: datetime | None


# --- execution reports ------------------------------------------------------------------


class ExecutionReportAccepted(Model):
    id: str
    #: ``queued`` (captured in the background) or how the capture went
    capture: str


class ReportedError(Model):
    category: str
    message: str = ""


class ExecutionReport(Model):
    id: str
    agent_id: int
    #: the end user the task served
    subject: str | None = None
    task_id: int | None
    task_title: str
    task_type: str
    task_description: str
    outcome: str
    error: ReportedError | None
    tool_calls: Any
    retry_count: int
    turn_count: int
    quality_score: float | None
    duration_ms: int
    recovery: str
    redactions: dict[str, Any]
    created_at: datetime
    capture_status: str | None
    capture_reason: str
    capture_strategy: str
    capture_method: str
    capture_attempts: int
    capture_next_attempt_at: datetime | None
    memory_id: str | None


# --- conversations ----------------------------------------------------------------------


class Conversation(Model):
    conversation_id: str
    #: the end user the conversation is with
    subject: str | None = None
    level: str
    session_id: str = ""
    project_id: int | None
    message_count: int = 0
    extracted_through_seq: int = 0
    verbatim_through_seq: int = 0
    pending_tokens: int = 0
    extraction_due_at: datetime | None = None
    summary_through_seq: int = 0
    summary_method: str = ""
    summary_error: str = ""
    created_at: datetime
    updated_at: datetime
    last_message_at: datetime | None = None


class ConversationMessage(Model):
    id: int
    conversation_id: str
    seq: int
    role: str
    content: str
    name: str = ""
    created_at: datetime
    received_at: datetime
    token_count: int = 0


class FlushResult(Model):
    """What a flush of messages did; extraction runs once ``extraction_due_at`` passes."""

    conversation_id: str
    stored: bool
    accepted: int
    message_ids: list[int]
    first_seq: int | None
    last_seq: int | None
    extraction_due_at: datetime | None
    subject: str | None = None


class ConversationContext(Model):
    """A conversation's context tier: its running summary and the recent messages."""

    conversation_id: str
    summary: str
    summary_through_seq: int
    summary_truncated: bool
    messages: list[ConversationMessage]
    first_included_seq: int | None
    omitted_messages: int
    tokens_used: int
    token_budget: int
    chat: list[ChatMessage]


class ExtractionRun(Model):
    id: str
    status: str = ""
    trigger: str
    first_seq: int
    last_seq: int
    message_count: int
    facts_proposed: int = 0
    added: int = 0
    skipped: int = 0
    superseded: int = 0
    below_confidence: int = 0
    ignored_supersedes: int = 0
    model: str = ""
    method: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""
    attempts: int = 0
    next_attempt_at: datetime | None = None
    created_at: datetime
    finished_at: datetime | None = None


class ExtractedFact(Model):
    position: int
    content: str
    category: str
    confidence: float
    tags: list[str] = Field(default_factory=list)
    decision: str
    memory_id: str | None = None
    superseded_ids: list[str] = Field(default_factory=list)
    ignored_supersedes: list[str] = Field(default_factory=list)
    message_ids: list[int] = Field(default_factory=list)


class ExtractionRunDetail(ExtractionRun):
    facts: list[ExtractedFact]


# --- dreams -----------------------------------------------------------------------------


class DreamRequest(Model):
    id: str
    status: str = ""
    method: str
    via: str
    deferrals: int = 0
    attempts: int = 0
    reason: str = ""
    next_attempt_at: datetime | None = None
    requested_at: datetime
    #: the dream run it produced once it ran (``status: ran``)
    run: dict[str, Any] | None


# --- end users (subjects) ---------------------------------------------------------------


class SubjectErasureReceipt(Model):
    """What erasing one end user deleted: rows per kind (``counts``), the kinds kept by design
    (``retained``: append-only execution reports, no longer linked), and the digest the
    audit entry records instead of the subject. ``scope``: ``company`` (an admin erased
    every agent's rows) or ``agent`` (an agent key erased its own)."""

    subject: str
    scope: str
    agent_id: int | None
    counts: dict[str, int]
    total: int
    retained: list[str]
    subject_digest: str
    audit_entry_id: int


class MemoriesFromMessages(FlushResult):
    """What ``memories.add(messages, …)`` did: the messages recorded as a conversation and
    its extraction ``queued`` (poll ``poll``), ``done`` (``memories`` holds what it formed),
    ``disabled`` or ``not_stored`` (memory level ``none``)."""

    extraction: str
    poll: str | None
    runs: list[ExtractionRun]
    memories: list[Memory] | None
