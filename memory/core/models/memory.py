"""Agent memory rows.

One table holds private memories and shared knowledge (``is_shared``): both are searched by
the same dense (pgvector) and sparse (BM25 over a Postgres ``tsvector``) legs. The
``search_vector`` and ``doc_length`` columns are maintained by a database trigger (see
migration 0002), so they can never drift from ``content``/``context``.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from persistence.models import Agent, Company, Project, Task
from synthorg.enums import MemoryCategory
from synthorg.subjects import SUBJECT_MAX_CHARS, subject_problem

MEMORY_CONTENT_MAX_CHARS = 20_000
MEMORY_CONTEXT_MAX_CHARS = 4_000
# The default embedder's width (all-MiniLM-L6-v2). The column itself is untyped: it holds
# vectors of any width, each indexed per embedder (memory.core.vector_indexes).
EMBEDDING_DIMS = 384
#: Chunk rows one memory may hold: its windows after the first (the config's
#: ``memory.chunking.max_chunks`` counts the first too, at most 32).
MAX_CHUNK_ROWS = 31


def validate_subject_field(value: str) -> None:
    """Model-level check of a non-blank ``subject`` (imports go through ``full_clean``)."""
    from django.core.exceptions import ValidationError

    problem = subject_problem(value)
    if problem is not None:
        raise ValidationError(problem, code="subject_invalid")


def subject_field() -> models.CharField:
    """The optional end-user id (:mod:`synthorg.subjects`); ``""`` when none."""
    return models.CharField(
        max_length=SUBJECT_MAX_CHARS,
        blank=True,
        default="",
        db_default="",
        validators=[validate_subject_field],
    )


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value.replace("_", " ").title()) for member in enum]


def unexpired_q(now: datetime, prefix: str = "") -> models.Q:
    """Not expired at ``now`` (``prefix``: the path to a memory, e.g. ``"memory__"``)."""
    return models.Q(**{f"{prefix}expires_at__isnull": True}) | models.Q(
        **{f"{prefix}expires_at__gt": now}
    )


def live_q(now: datetime, prefix: str = "") -> models.Q:
    """**The live-memory rule**: retrievable at ``now`` — not expired and not superseded
    (``prefix``: the path to a memory from another model, e.g. ``"memory__"``)."""
    return unexpired_q(now, prefix) & models.Q(**{f"{prefix}superseded_at__isnull": True})


class MemoryQuerySet(models.QuerySet):
    def live(self, now: datetime) -> MemoryQuerySet:
        """Memories retrievable at ``now`` (:func:`live_q`)."""
        return self.filter(live_q(now))

    def unexpired(self, now: datetime) -> MemoryQuerySet:
        return self.filter(unexpired_q(now))


class Memory(models.Model):
    class Level(models.TextChoices):
        PERSISTENT = "persistent", "Persistent"
        PROJECT = "project", "Project"
        SESSION = "session", "Session"

    class EmbeddingStatus(models.TextChoices):
        READY = "ready", "Ready"
        PENDING = "pending", "Pending"  # embedder failed; backfilled by a q2 task

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="memories")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="memories")
    namespace = models.CharField(max_length=100, default="default")
    category = models.CharField(max_length=16, choices=_choices(MemoryCategory))
    content = models.TextField()
    # Text the memory is indexed with but that is not part of it: e.g. the message a reply
    # answers. Searched by both legs, never returned as the memory's content.
    context = models.TextField(blank=True, default="")
    source = models.CharField(max_length=200, blank=True, default="")
    confidence = models.FloatField(default=1.0)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    is_shared = models.BooleanField(default=False)
    #: the end user this memory is about (``""``: none); erased with them
    subject = subject_field()

    level = models.CharField(max_length=16, choices=Level.choices, default=Level.PERSISTENT)
    session_id = models.CharField(max_length=200, blank=True, default="")
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="memories"
    )
    #: Working memory scoped to a task: read only by requests naming the task, archived
    #: when the task ends (``persistence.services.tasks.on_task_ended``). The cascade is a
    #: backstop: the task services archive these rows before a task is deleted.
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, null=True, blank=True, related_name="memories"
    )

    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    superseded_at = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )

    # Skill pool (procedural memories): distribution scope (agent | role | department | org;
    # "" for other categories) and how often agents reported applying the lesson.
    scope = models.CharField(max_length=16, blank=True, default="")
    application_count = models.PositiveIntegerField(default=0)
    last_applied_at = models.DateTimeField(null=True, blank=True)

    embedding = VectorField(null=True, blank=True)  # untyped: any width (see above)
    # Vectors of the content's later windows (MemoryChunk rows, memory.core.chunking): 0 for
    # a memory whose content fits one window. Kept with the rows in one transaction; the
    # dense leg reads chunks only of rows with chunks (a partial index finds them).
    chunk_count = models.PositiveSmallIntegerField(default=0, db_default=0)
    embedder_id = models.CharField(max_length=100, blank=True, default="")
    embedding_status = models.CharField(
        max_length=16, choices=EmbeddingStatus.choices, default=EmbeddingStatus.PENDING
    )
    # Maintained by the trigger: english-stemmed lexemes of content + context, and the
    # token count (after stop words) that BM25 normalises by.
    search_vector = SearchVectorField(null=True, editable=False)
    doc_length = models.PositiveIntegerField(default=0, editable=False)

    objects = MemoryQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "id")
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=[c.value for c in MemoryCategory]),
                name="memory_category_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(level__in=["persistent", "project", "session"]),
                name="memory_level_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0.0) & models.Q(confidence__lte=1.0),
                name="memory_confidence_range",
            ),
            models.CheckConstraint(
                condition=~models.Q(content__regex=r"^\s*$"), name="memory_content_not_blank"
            ),
            models.CheckConstraint(
                condition=~models.Q(namespace=""), name="memory_namespace_not_blank"
            ),
            models.CheckConstraint(
                condition=models.Q(scope__in=["", "agent", "role", "department", "org"]),
                name="memory_scope_valid",
            ),
            # The org skill pool holds only shared entries.
            models.CheckConstraint(
                condition=~models.Q(scope="org") | models.Q(is_shared=True),
                name="memory_org_scope_is_shared",
            ),
            models.CheckConstraint(
                condition=~models.Q(level="session") | ~models.Q(session_id=""),
                name="memory_session_level_has_session",
            ),
            models.CheckConstraint(
                condition=~models.Q(level="project") | models.Q(project__isnull=False),
                name="memory_project_level_has_project",
            ),
            # Only working memory is scoped to a task, and never shared knowledge.
            models.CheckConstraint(
                condition=models.Q(task__isnull=True)
                | (models.Q(category="working") & models.Q(is_shared=False)),
                name="memory_task_scope_is_private_working",
            ),
            models.CheckConstraint(
                condition=models.Q(embedding__isnull=True) | ~models.Q(embedder_id=""),
                name="memory_embedding_has_embedder",
            ),
            # Chunks are the later windows of an embedded memory: none without a first vector.
            models.CheckConstraint(
                condition=models.Q(chunk_count__lte=MAX_CHUNK_ROWS)
                & (models.Q(chunk_count=0) | models.Q(embedding__isnull=False)),
                name="memory_chunk_count_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["company", "agent", "namespace", "category", "-created_at"],
                name="memory_agent_listing",
            ),
            models.Index(fields=["agent", "-created_at"], name="memory_agent_recent"),
            models.Index(
                fields=["company", "-created_at"],
                condition=models.Q(is_shared=True),
                name="memory_shared_recent",
            ),
            models.Index(fields=["agent", "session_id"], name="memory_agent_session"),
            models.Index(
                fields=["company", "subject", "-created_at"],
                condition=~models.Q(subject=""),
                name="memory_subject",
            ),
            models.Index(
                fields=["task"], condition=models.Q(task__isnull=False), name="memory_task"
            ),
            models.Index(fields=["expires_at"], name="memory_expires"),
            # The dense leg's chunk branch starts from the scope's chunked rows only.
            models.Index(
                fields=["agent", "is_shared"],
                condition=models.Q(chunk_count__gt=0),
                name="memory_agent_chunked",
            ),
            models.Index(
                fields=["company"],
                condition=models.Q(chunk_count__gt=0, is_shared=True),
                name="memory_shared_chunked",
            ),
            models.Index(
                fields=["embedding_status"],
                condition=models.Q(embedding_status="pending"),
                name="memory_embedding_pending",
            ),
            # fastupdate off: no pending list for BM25 lookups to scan (see migration 0006).
            GinIndex(fields=["search_vector"], name="memory_search_vector", fastupdate=False),
            GinIndex(fields=["tags"], name="memory_tags", fastupdate=False),
            # HNSW: one partial index per (embedder, width), in the catalog only (built by
            # migration 0011 and memory.core.vector_indexes.ensure_vector_index).
        ]

    def __str__(self) -> str:
        return f"{self.category}: {self.content[:60]}"


class MemoryChunk(models.Model):
    """The vector of one later window of a memory's content (window 0 is
    ``Memory.embedding``); see :mod:`memory.core.chunking`. Deleted with its memory."""

    id = models.BigAutoField(primary_key=True)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveSmallIntegerField()
    embedding = VectorField()  # untyped, like Memory.embedding
    embedder_id = models.CharField(max_length=100)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "ordinal"], name="memory_chunk_unique"),
            models.CheckConstraint(
                condition=models.Q(ordinal__gte=1) & models.Q(ordinal__lte=MAX_CHUNK_ROWS),
                name="memory_chunk_ordinal_range",
            ),
            models.CheckConstraint(
                condition=~models.Q(embedder_id=""), name="memory_chunk_has_embedder"
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.ordinal} of {self.memory_id}"
