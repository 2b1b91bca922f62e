"""Conversations flushed by agents, the extraction runs that turn them into memories, the
daily journal and the dream diary.

A :class:`Conversation` is one agent's conversation (``external_id`` is the id the agent
uses in URLs); its messages are numbered ``seq`` 1, 2, 3… without gaps, allocated under the
conversation's row lock, so "every message after ``extracted_through_seq``" is exactly the
unprocessed part. An :class:`ExtractionRun` is a durable job (:mod:`synthorg.jobs`) over a
seq range: at most one is open (queued, running or waiting for its retry) per conversation,
and a worker runs it under the kernel's lease, so two workers never extract the same
messages.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models

from memory.core.models.memory import subject_field
from memory.ingestion.domain import CONVERSATION_ID_MAX_CHARS, MESSAGE_NAME_MAX_CHARS
from persistence.models import Agent, Company, Project
from synthorg.jobs.models import (
    DurableJob,
    JobStatusChange,
    ScheduledRun,
    ScheduledRunStatusChange,
    scheduled_constraints,
    scheduled_due_index,
)


class Conversation(models.Model):
    class Level(models.TextChoices):
        PERSISTENT = "persistent", "Persistent"
        PROJECT = "project", "Project"
        SESSION = "session", "Session"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="conversations")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    external_id = models.CharField(max_length=CONVERSATION_ID_MAX_CHARS)
    #: the end user the conversation is with ("": none), fixed when it starts; the memories
    #: extracted from it carry it, and erasing the subject deletes the conversation
    subject = subject_field()
    # The binding of the agent's memory level when the conversation started; its messages
    # and the memories extracted from them share it (purged with the session / project).
    level = models.CharField(max_length=16, choices=Level.choices)
    session_id = models.CharField(max_length=200, blank=True, default="")
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="conversations"
    )

    message_count = models.PositiveIntegerField(default=0)  # == the last seq
    extracted_through_seq = models.PositiveIntegerField(default=0)
    # The last seq whose turns are stored as verbatim memories: with no LLM, or meanwhile
    # when an LLM run failed (the range stays pending for the LLM, which adds facts on top).
    verbatim_through_seq = models.PositiveIntegerField(default=0)
    pending_tokens = models.PositiveIntegerField(default=0)  # of messages not yet extracted
    # When the debounced extraction should fire (null: nothing pending).
    extraction_due_at = models.DateTimeField(null=True, blank=True)

    summary = models.TextField(blank=True, default="")  # the running summary
    summary_through_seq = models.PositiveIntegerField(default=0)
    summary_updated_at = models.DateTimeField(null=True, blank=True)
    # What wrote the running summary last: llm, or truncation (no LLM, or the LLM call failed:
    # then summary_error says why; empty when the LLM wrote it).
    summary_method = models.CharField(
        max_length=16,
        blank=True,
        default="",
        choices=[("llm", "LLM"), ("truncation", "Truncation")],
    )
    summary_error = models.TextField(blank=True, default="")

    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    last_message_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-updated_at", "-id")
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"], name="ingestion_conversation_unique_per_agent"
            ),
            models.CheckConstraint(
                condition=models.Q(level__in=["persistent", "project", "session"]),
                name="ingestion_conversation_level_valid",
            ),
            models.CheckConstraint(
                condition=~models.Q(level="session") | ~models.Q(session_id=""),
                name="ingestion_conversation_session_bound",
            ),
            models.CheckConstraint(
                condition=~models.Q(level="project") | models.Q(project__isnull=False),
                name="ingestion_conversation_project_bound",
            ),
            models.CheckConstraint(
                condition=models.Q(extracted_through_seq__lte=models.F("message_count")),
                name="ingestion_conversation_extracted_le_count",
            ),
            models.CheckConstraint(
                condition=models.Q(verbatim_through_seq__lte=models.F("message_count")),
                name="ingestion_conversation_verbatim_le_count",
            ),
            models.CheckConstraint(
                condition=models.Q(summary_through_seq__lte=models.F("message_count")),
                name="ingestion_conversation_summary_le_count",
            ),
            models.CheckConstraint(
                condition=models.Q(summary_method__in=["", "llm", "truncation"]),
                name="ingestion_conversation_summary_method_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "agent", "-updated_at"], name="ingestion_conv_recent"),
            models.Index(
                fields=["extraction_due_at"],
                condition=models.Q(extraction_due_at__isnull=False),
                name="ingestion_conv_due",
            ),
            models.Index(fields=["agent", "session_id"], name="ingestion_conv_session"),
            models.Index(
                fields=["company", "subject"],
                condition=~models.Q(subject=""),
                name="ingestion_conv_subject",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.agent.name})"


class ConversationMessage(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"
        TOOL = "tool", "Tool"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    name = models.CharField(max_length=MESSAGE_NAME_MAX_CHARS, blank=True, default="")
    created_at = models.DateTimeField()  # as the client says (defaults to the receipt time)
    received_at = models.DateTimeField()
    token_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("conversation_id", "seq")
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "seq"], name="ingestion_message_seq_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=["user", "assistant", "system", "tool"]),
                name="ingestion_message_role_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(seq__gte=1), name="ingestion_message_seq_pos"
            ),
        ]
        indexes = [
            models.Index(fields=["company", "agent", "-received_at"], name="ingestion_msg_agent"),
            GinIndex(
                SearchVector("content", config="english"),
                name="ingestion_msg_search",
                fastupdate=False,
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role}: {self.content[:60]}"


class ExtractionRun(DurableJob):
    """One extraction of a conversation's seq range, a durable job (:mod:`synthorg.jobs`, the
    kind ``ingestion.extraction``): claimed under a lease, retried with the kernel's back-off
    when the LLM fails (``failed`` with ``next_attempt_at``; ``gave_up`` after its last
    attempt, an operator can re-queue it), deferred uncharged while the company's LLM slots
    are busy (back to ``queued``). The runs that store turns verbatim (triggers ``turns`` and
    ``llm_failed``) are records: created ``succeeded``, never due."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        SKIPPED_NO_LLM = "skipped_no_llm", "Skipped (no LLM)"
        # the LLM failed: due again at ``next_attempt_at`` (runs before 0010: not retried)
        FAILED = "failed", "Failed"
        GAVE_UP = "gave_up", "Gave up"
        # extraction was turned off (or the agent keeps no memories) before it ran
        CANCELLED = "cancelled", "Cancelled"
        # runs before 0010 that found the LLM slots busy (a deferral now re-queues the run)
        DEFERRED = "deferred", "Deferred (the company's LLM slots were busy)"

    class Trigger(models.TextChoices):
        DEBOUNCE = "debounce", "Debounce"
        PENDING_TOKENS = "pending_tokens", "Pending tokens"
        RETRY = "retry", "Retry"
        MANUAL = "manual", "Manual"
        # an LLM run of this range failed: its turns were stored verbatim meanwhile
        LLM_FAILED = "llm_failed", "LLM failed (turns stored verbatim)"
        # the turns stored verbatim before the LLM run adds its facts (store_turns)
        TURNS = "turns", "Turns stored verbatim"

    class Method(models.TextChoices):
        LLM = "llm", "LLM"
        VERBATIM = "verbatim", "Verbatim"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="extraction_runs"
    )
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    first_seq = models.PositiveIntegerField()
    last_seq = models.PositiveIntegerField()
    message_count = models.PositiveIntegerField()
    facts_proposed = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)  # near duplicates (write-gate NOOP)
    superseded = models.PositiveIntegerField(default=0)  # older memories marked superseded
    below_confidence = models.PositiveIntegerField(default=0)
    ignored_supersedes = models.PositiveIntegerField(default=0)  # ids not the agent's own
    model = models.CharField(max_length=200, blank=True, default="")
    # llm: facts extracted by the LLM; verbatim: the turns themselves were stored (no LLM,
    # or the LLM run of the range failed: trigger ``llm_failed``).
    method = models.CharField(max_length=16, blank=True, default="", choices=Method.choices)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(first_seq__lte=models.F("last_seq"))
                & models.Q(first_seq__gte=1),
                name="ingestion_run_seq_range",
            ),
            # one open run per conversation: queued, running, or failed and due again
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(status__in=["queued", "running"])
                | models.Q(status="failed", next_attempt_at__isnull=False),
                name="ingestion_run_one_open",
            ),
        ]
        indexes = [
            models.Index(fields=["conversation", "-created_at"], name="ingestion_run_conv"),
            models.Index(fields=["company", "agent", "-created_at"], name="ingestion_run_agent"),
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(next_attempt_at__isnull=False),
                name="ingestion_run_due",
            ),
        ]

    def __str__(self) -> str:
        return f"extraction {self.id} ({self.status})"

    @property
    def error(self) -> str:
        """The run's ``reason`` under the name the REST API (and its clients) use."""
        return self.reason

    @property
    def finished_at(self):
        """The run's ``completed_at`` under the name the REST API (and its clients) use."""
        return self.completed_at


class ExtractionRunStatusChange(JobStatusChange):
    """One status transition of an extraction run. **Append-only** (a Postgres trigger
    rejects UPDATE/DELETE/TRUNCATE). It names the run by id, not by a foreign key, and holds
    no content: deleting a conversation (or erasing its subject) deletes its runs and leaves
    this history of states."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    run_id = models.UUIDField()
    status = models.CharField(max_length=24, choices=ExtractionRun.Status.choices)

    class Meta:
        ordering = ("run_id", "id")
        indexes = [models.Index(fields=["run_id", "id"], name="ingestion_runhist")]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ExtractedFact(models.Model):
    """One fact an extraction run proposed, what the write gate decided, and its provenance."""

    class Decision(models.TextChoices):
        ADDED = "added", "Added"
        NOOP = "noop", "Near duplicate (skipped)"
        BELOW_CONFIDENCE = "below_confidence", "Below the confidence threshold"

    run = models.ForeignKey(ExtractionRun, on_delete=models.CASCADE, related_name="facts")
    position = models.PositiveSmallIntegerField()
    content = models.TextField()
    category = models.CharField(max_length=16)
    confidence = models.FloatField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    # The memory it produced (ADD) or duplicated (NOOP); kept if the memory goes away.
    memory_id = models.UUIDField(null=True, blank=True)
    superseded_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    ignored_supersedes = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    message_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)

    class Meta:
        ordering = ("run_id", "position")
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="ingestion_fact_position"),
        ]
        indexes = [models.Index(fields=["memory_id"], name="ingestion_fact_memory")]

    def __str__(self) -> str:
        return f"{self.decision}: {self.content[:60]}"


class JournalEntry(models.Model):
    """One entry of an agent's daily journal (the seed's ``YYYY-MM-DD.md``), in Postgres so
    web and worker processes on different machines see the same journal."""

    class Kind(models.TextChoices):
        EXTRACTION = "extraction", "Extraction"
        DREAM = "dream", "Dream"

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="journal_entries")
    day = models.DateField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    run = models.ForeignKey(
        ExtractionRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    conversation_external_id = models.CharField(max_length=CONVERSATION_ID_MAX_CHARS, blank=True)
    markdown = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("agent_id", "day", "created_at", "id")
        verbose_name_plural = "journal entries"
        indexes = [
            models.Index(
                fields=["company", "agent", "day", "created_at"], name="ingestion_journal"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.kind} ({self.agent.name})"


class DreamRun(models.Model):
    """One deep dream of one agent: the dream diary entry (what changed and why)."""

    class Status(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        UNCHANGED = "unchanged", "Skipped (inputs unchanged)"
        NOTHING_NEW = "nothing_new", "Skipped (no journal since the last dream)"
        SKIPPED_NO_LLM = "skipped_no_llm", "Skipped (no LLM)"
        FAILED = "failed", "Failed"

    class Method(models.TextChoices):
        LLM = "llm", "LLM"
        EXTRACTIVE = "extractive", "Extractive"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="dream_runs")
    status = models.CharField(max_length=16, choices=Status.choices)
    trigger = models.CharField(max_length=16, default="schedule")
    input_hash = models.CharField(max_length=64, blank=True, default="")
    journal_from = models.DateField(null=True, blank=True)
    journal_to = models.DateField(null=True, blank=True)
    journal_entries = models.PositiveIntegerField(default=0)
    previous_core_id = models.UUIDField(null=True, blank=True)
    core_memory_id = models.UUIDField(null=True, blank=True)
    diary = models.TextField(blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    # llm: the LLM rewrote the core; extractive: no LLM, the extractive strategy kept the
    # journal's key facts and anchors verbatim.
    method = models.CharField(
        max_length=16,
        blank=True,
        default="",
        choices=[("llm", "LLM"), ("extractive", "Extractive")],
    )
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = [
            models.Index(fields=["company", "agent", "-created_at"], name="ingestion_dream_agent"),
        ]

    def __str__(self) -> str:
        return f"dream {self.created_at:%Y-%m-%d %H:%M} {self.status} ({self.agent.name})"


class DreamRequest(DurableJob):
    """An agent asked for a deep dream now (REST ``POST /dreams`` or the ``request_dream``
    tool): the row the per-agent and per-company rate limits count, a durable job
    (:mod:`synthorg.jobs`: claimed under a lease, retried with back-off when the LLM fails)
    and the link to the run that answered it."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        RAN = "ran", "Ran"
        # its LLM dream failed: due again at ``next_attempt_at`` (or given up)
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="dream_requests")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    #: the interface it came through (``rest``, ``mcp``, ``stdio``)
    via = models.CharField(max_length=16)
    #: the method it was expected to run with when requested (``llm`` or ``extractive``)
    method = models.CharField(max_length=16, choices=DreamRun.Method.choices)
    #: times it found the company's LLM slots busy and waited (not counted as attempts)
    deferrals = models.PositiveIntegerField(default=0)
    run = models.OneToOneField(
        DreamRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="request"
    )
    requested_at = models.DateTimeField()

    class Meta:
        ordering = ("-requested_at", "-id")
        indexes = [
            models.Index(
                fields=["company", "agent", "-requested_at"], name="ingestion_dreamreq_agent"
            ),
            models.Index(fields=["company", "-requested_at"], name="ingestion_dreamreq_company"),
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(next_attempt_at__isnull=False),
                name="ingestion_dreamreq_due",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["queued", "running", "failed"], run__isnull=True)
                | models.Q(status="ran"),
                name="ingestion_dreamreq_queued_has_no_run",
            ),
        ]

    def __str__(self) -> str:
        return f"dream request {self.requested_at:%Y-%m-%d %H:%M} {self.status}"


class DreamRequestStatusChange(JobStatusChange):
    """One status transition of a dream request. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE). It names the request by id, not by a foreign key, and holds no
    content: an agent's erasure deletes its requests and leaves this history of states."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    request_id = models.UUIDField()
    status = models.CharField(max_length=24, choices=DreamRequest.Status.choices)

    class Meta:
        ordering = ("request_id", "id")
        indexes = [models.Index(fields=["request_id", "id"], name="ingestion_dreamreqhist")]

    def __str__(self) -> str:
        return f"{self.request_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ScheduledDream(ScheduledRun):
    """A company's scheduled dream (a durable job, :mod:`synthorg.jobs.scheduled`): ``queued``
    until one of the company's LLM slots is free — with every slot taken it waits for its
    turn, served by the slot's holder — then ``running`` and ``done`` with the dreams of all
    its persistent agents (``runs``: the :class:`DreamRun` rows recorded). ``failed``: the
    run raised (the next scheduled dream starts afresh). At most one open dream per company.
    Content-free: the dreams themselves are the :class:`DreamRun` rows."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    runs = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("created_at", "id")
        constraints = scheduled_constraints("ingestion_scheduled_dream")
        indexes = [scheduled_due_index("ingestion_scheddream_due")]

    def __str__(self) -> str:
        return f"scheduled dream {self.company_id} [{self.status}]"


class ScheduledDreamStatusChange(ScheduledRunStatusChange):
    """One status transition of a scheduled dream. **Append-only** (a Postgres trigger
    rejects UPDATE/DELETE/TRUNCATE): the dream holds the latest state, this the history."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    dream = models.ForeignKey(ScheduledDream, on_delete=models.PROTECT, related_name="history")

    class Meta:
        ordering = ("dream", "id")
        indexes = [models.Index(fields=["dream", "id"], name="ingestion_scheddreamhist")]

    def __str__(self) -> str:
        return f"{self.dream_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"
