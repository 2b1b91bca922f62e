"""Org facts as an append-only operation log plus a materialised snapshot.

* :class:`OperationLogEntry` — every PUBLISH or RETRACT of a fact, immutable (Postgres
  triggers reject UPDATE/DELETE/TRUNCATE, migration 0002). ``(fact_id, version)`` is unique
  and versions count 1, 2, 3… per fact. Each row carries its own english ``search_vector``
  and ``doc_length`` (filled by a BEFORE INSERT trigger), so any past state is searchable.
* :class:`OrgFact` — the current state of each fact, changed only by
  ``orgmemory.services.facts`` in the same transaction as the log row it reflects.
* :class:`FactVersionEmbedding` — the dense vector of one PUBLISH row. Kept apart from the
  log because it is derived data: it may be missing (embedder unavailable) and backfilled.
  A fact longer than the embedder's window is embedded as overlapping windows
  (:mod:`synthorg.retrieval.windows`): the first here, each later one a
  :class:`FactVersionChunk`; the dense leg scores the version by its best window.
* :class:`WriteAccessRequest` — a write an agent was denied, waiting for a human decision
  (a mutable queue row: the latest state).
* :class:`WriteRequestDecision` — each decision on a request, append-only (migration 0008),
  written in the deciding transaction.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import VectorField

from persistence.models import Agent, Company
from synthorg.company_config.memory import MAX_CHUNKS_LIMIT
from synthorg.enums import AutonomyLevel, OrgFactCategory, SeniorityLevel

_CATEGORIES = [c.value for c in OrgFactCategory]


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value.replace("_", " ").title()) for member in enum]


class OperationLogEntry(models.Model):
    class Operation(models.TextChoices):
        PUBLISH = "PUBLISH", "Publish"
        RETRACT = "RETRACT", "Retract"

    operation_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="org_operations")
    # The fact's id (its snapshot row's primary key): the log references the snapshot so the
    # admin can show a fact's versions inline; the snapshot row is created first.
    fact = models.ForeignKey(
        "OrgFact", on_delete=models.PROTECT, db_column="fact_id", related_name="operations"
    )
    version = models.PositiveIntegerField()
    operation_type = models.CharField(max_length=8, choices=Operation.choices)
    content = models.TextField(null=True, blank=True)
    category = models.CharField(max_length=32, choices=_choices(OrgFactCategory))
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)

    author_is_human = models.BooleanField()
    author_agent = models.ForeignKey(
        Agent, on_delete=models.PROTECT, null=True, blank=True, related_name="org_operations"
    )
    author_seniority = models.CharField(
        max_length=16, choices=_choices(SeniorityLevel), null=True, blank=True
    )
    author_autonomy_level = models.CharField(
        max_length=16, choices=_choices(AutonomyLevel), null=True, blank=True
    )
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="org_operations",
    )
    # Set when an agent's write-access request was approved: the agent is the author, the
    # approving human is recorded here.
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approved_org_operations",
    )
    write_request = models.ForeignKey(
        "WriteAccessRequest",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="operations",
    )
    timestamp = models.DateTimeField()

    search_vector = SearchVectorField(null=True, editable=False)
    doc_length = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ("fact_id", "version")
        verbose_name = "operation log entry"
        verbose_name_plural = "operation log"
        constraints = [
            models.UniqueConstraint(fields=["fact", "version"], name="orglog_fact_version"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="orglog_version_min"),
            models.CheckConstraint(
                condition=models.Q(category__in=_CATEGORIES), name="orglog_category_valid"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(operation_type="PUBLISH")
                    & models.Q(content__isnull=False)
                    & ~models.Q(content__regex=r"^\s*$")
                )
                | (models.Q(operation_type="RETRACT") & models.Q(content__isnull=True)),
                name="orglog_content_matches_operation",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(author_is_human=True)
                    & models.Q(author_user__isnull=False)
                    & models.Q(author_agent__isnull=True)
                    & models.Q(author_seniority__isnull=True)
                    & models.Q(author_autonomy_level__isnull=True)
                )
                | (
                    models.Q(author_is_human=False)
                    & models.Q(author_agent__isnull=False)
                    & models.Q(author_seniority__isnull=False)
                    & models.Q(author_user__isnull=True)
                ),
                name="orglog_author_consistent",
            ),
            models.CheckConstraint(
                condition=models.Q(approved_by__isnull=True) | models.Q(author_is_human=False),
                name="orglog_approval_for_agents",
            ),
            # Core policies are human-authored (migration 0009 adds it NOT VALID: rows
            # written before the rule existed stay in the append-only log as they are).
            models.CheckConstraint(
                condition=~models.Q(category="core_policy") | models.Q(author_is_human=True),
                name="orglog_core_policy_human",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "timestamp"], name="orglog_company_time"),
            models.Index(fields=["company", "fact", "-version"], name="orglog_company_fact"),
            GinIndex(fields=["search_vector"], name="orglog_search_vector"),
        ]

    def __str__(self) -> str:
        return f"{self.operation_type} {self.fact_id} v{self.version}"


class OrgFact(models.Model):
    """The materialised current state of one fact (the spec's ``OperationLogSnapshot``).

    ``version`` is that of the latest log row; while the fact is live it is a PUBLISH row
    whose content this row repeats. A retracted fact keeps its last content.
    """

    fact_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="org_facts")
    category = models.CharField(max_length=32, choices=_choices(OrgFactCategory))
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    version = models.PositiveIntegerField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    retracted_at = models.DateTimeField(null=True, blank=True)
    # Where a core policy stands in the block agents receive (0 first); set by
    # ``orgmemory.services.policies``. Null: after the positioned ones, oldest first.
    position = models.PositiveIntegerField(null=True, blank=True)
    # Derived by the database from ``content`` (migration 0006), like the log's own: what
    # relevance ranking of the current facts reads, through a GIN index of the live ones.
    search_vector = SearchVectorField(null=True, editable=False)
    doc_length = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        ordering = ("created_at", "fact_id")
        verbose_name = "org fact"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=_CATEGORIES), name="orgfact_category_valid"
            ),
            models.CheckConstraint(
                condition=~models.Q(content__regex=r"^\s*$"), name="orgfact_content_not_blank"
            ),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="orgfact_version_min"),
            models.CheckConstraint(
                condition=models.Q(retracted_at__isnull=True)
                | models.Q(retracted_at__gte=models.F("created_at")),
                name="orgfact_created_before_retracted",
            ),
        ]
        indexes = [
            models.Index(
                fields=["company", "category", "created_at"],
                condition=models.Q(retracted_at__isnull=True),
                name="orgfact_live",
            ),
            GinIndex(
                fields=["search_vector"],
                condition=models.Q(retracted_at__isnull=True),
                name="orgfact_live_search",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.category}: {self.content[:60]}"

    @property
    def is_retracted(self) -> bool:
        return self.retracted_at is not None


class FactVersionEmbedding(models.Model):
    operation = models.OneToOneField(
        OperationLogEntry, on_delete=models.PROTECT, primary_key=True, related_name="embedding"
    )
    embedder_id = models.CharField(max_length=100)
    embedding = VectorField()  # untyped: the company embedder's width (any)
    #: how many later windows the version has (its FactVersionChunk rows): the dense scan
    #: looks for chunks only where there are some
    chunk_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(embedder_id=""), name="orgembedding_has_embedder"
            ),
            models.CheckConstraint(
                condition=models.Q(chunk_count__lte=MAX_CHUNKS_LIMIT - 1),
                name="orgembedding_chunk_count_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.operation_id} [{self.embedder_id}]"


class FactVersionChunk(models.Model):
    """The vector of one later window (``ordinal`` ≥ 1) of a PUBLISH row's content, of the
    same embedder as its :class:`FactVersionEmbedding` (replaced with it)."""

    id = models.BigAutoField(primary_key=True)
    operation = models.ForeignKey(
        OperationLogEntry, on_delete=models.PROTECT, related_name="embedding_chunks"
    )
    ordinal = models.PositiveSmallIntegerField()
    embedder_id = models.CharField(max_length=100)
    embedding = VectorField()  # untyped, like FactVersionEmbedding.embedding

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["operation", "ordinal"], name="orgchunk_unique"),
            models.CheckConstraint(
                condition=models.Q(ordinal__gte=1) & models.Q(ordinal__lte=MAX_CHUNKS_LIMIT - 1),
                name="orgchunk_ordinal_range",
            ),
            models.CheckConstraint(
                condition=~models.Q(embedder_id=""), name="orgchunk_has_embedder"
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.ordinal} of {self.operation_id} [{self.embedder_id}]"


class WriteAccessRequest(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(
        Company, on_delete=models.PROTECT, related_name="org_write_requests"
    )
    requester = models.ForeignKey(
        Agent, on_delete=models.PROTECT, related_name="org_write_requests"
    )
    requester_seniority = models.CharField(max_length=16, choices=_choices(SeniorityLevel))
    requester_autonomy_level = models.CharField(
        max_length=16, choices=_choices(AutonomyLevel), null=True, blank=True
    )
    # Null: a new fact. Set: a new version of that fact.
    fact_id = models.UUIDField(null=True, blank=True)
    category = models.CharField(max_length=32, choices=_choices(OrgFactCategory))
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    justification = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="decided_org_write_requests",
    )
    decision_reason = models.TextField(blank=True, default="")
    published_operation = models.OneToOneField(
        OperationLogEntry,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approved_request",
    )

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name = "org write-access request"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=_CATEGORIES), name="orgreq_category_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "approved", "rejected"]),
                name="orgreq_status_valid",
            ),
            models.CheckConstraint(
                condition=~models.Q(content__regex=r"^\s*$"), name="orgreq_content_not_blank"
            ),
            models.CheckConstraint(
                condition=~models.Q(justification__regex=r"^\s*$"),
                name="orgreq_justification_not_blank",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(status="pending")
                    & models.Q(decided_at__isnull=True)
                    & models.Q(decided_by__isnull=True)
                    & models.Q(published_operation__isnull=True)
                )
                | (
                    models.Q(status="approved")
                    & models.Q(decided_at__isnull=False)
                    & models.Q(decided_by__isnull=False)
                    & models.Q(published_operation__isnull=False)
                )
                | (
                    models.Q(status="rejected")
                    & models.Q(decided_at__isnull=False)
                    & models.Q(decided_by__isnull=False)
                    & models.Q(published_operation__isnull=True)
                    & ~models.Q(decision_reason__regex=r"^\s*$")
                ),
                name="orgreq_decision_consistent",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "status", "-created_at"], name="orgreq_status"),
            models.Index(fields=["company", "requester", "-created_at"], name="orgreq_requester"),
        ]

    def __str__(self) -> str:
        return f"{self.category} request by {self.requester.name} ({self.status})"


class WriteRequestDecision(models.Model):
    """One decision on a write-access request. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the request row holds the latest state, this the history."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"

    id = models.BigAutoField(primary_key=True)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    request = models.ForeignKey(
        WriteAccessRequest, on_delete=models.PROTECT, related_name="decisions"
    )
    decision = models.CharField(max_length=8, choices=Decision.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    # The fact version an approval published (null for a rejection).
    published_operation = models.ForeignKey(
        OperationLogEntry, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("request", "id")
        indexes = [models.Index(fields=["request", "id"], name="writereqdecision_request")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(decision="approve") & models.Q(published_operation__isnull=False)
                )
                | (
                    models.Q(decision="reject")
                    & models.Q(published_operation__isnull=True)
                    & ~models.Q(reason__regex=r"^\s*$")
                ),
                name="writereqdecision_consistent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.request_id}: {self.decision} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class PolicyDelivery(models.Model):
    """When an agent last received the core policy block in its context, and which revision.

    One row per agent, upserted by ``/memories/context`` (``policy_delivery_record``): the
    Core policies page shows who holds an older block, without a row per request.
    """

    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="policy_delivery")
    #: SHA-256 (hex) of the block's text (``orgmemory.selectors.policies.block_revision``)
    revision = models.CharField(max_length=64)
    #: the policies behind it: ``"<fact_id>:v<version>"`` or ``"config-<index>"``
    versions = ArrayField(models.CharField(max_length=64), default=list)
    delivered_at = models.DateTimeField()

    class Meta:
        verbose_name = "core policy delivery"
        verbose_name_plural = "core policy deliveries"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(revision__regex=r"^[0-9a-f]{64}$"),
                name="policydelivery_revision_sha256",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-delivered_at"], name="policydelivery_company_time")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} at {self.delivered_at:%Y-%m-%d %H:%M:%S}: {self.revision[:12]}"


# The approval queue lives in its own module; importing it here registers the models.
from orgmemory.approval_models import (  # noqa: E402
    ApprovalDecision,
    ApprovalItem,
    ApprovalWebhook,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookDeliveryStatusChange,
)

__all__ = [
    "ApprovalDecision",
    "ApprovalItem",
    "ApprovalWebhook",
    "FactVersionChunk",
    "FactVersionEmbedding",
    "OperationLogEntry",
    "OrgFact",
    "PolicyDelivery",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookDeliveryStatusChange",
    "WriteAccessRequest",
    "WriteRequestDecision",
]
