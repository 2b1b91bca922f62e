"""Procedural learning state: execution reports, their capture status, and learned lessons.

* :class:`ExecutionReport` — one task execution as the agent reported it (redacted on the way
  in). **Append-only** (a Postgres trigger rejects UPDATE/DELETE/TRUNCATE): it is the
  trajectory record the skill evolver mines, so nothing may rewrite it.
* :class:`ExecutionCapture` — the mutable side of a report: what the capture pipeline did
  with it (queued → captured / skipped / failed) and which memory it produced.
* :class:`ProceduralLesson` — the three tiers of a PROCEDURAL memory (the memory row holds
  the discovery tier as its content, which is what is embedded and ranked; activation and
  execution tiers live here) and where it came from.
* :class:`OrgSkill` — the org skill store: every approved org-wide skill, whoever proposed
  it (the skill evolver, an agent's lesson for the org pool, an operator), stored structured
  beside the entry agents retrieve (a ``procedure`` fact or a shared PROCEDURAL memory), with
  its usage counters.
"""

from __future__ import annotations

import uuid

from django.db import models

from memory.core.models.memory import validate_subject_field
from orgmemory.models import OrgFact
from persistence.models import Agent, Company, Task
from synthorg.jobs.models import DurableJob, JobStatusChange
from synthorg.subjects import SUBJECT_MAX_CHARS

TASK_TITLE_MAX_CHARS = 500
TASK_TYPE_MAX_CHARS = 100
TASK_DESCRIPTION_MAX_CHARS = 10_000
ERROR_CATEGORY_MAX_CHARS = 100
ERROR_MESSAGE_MAX_CHARS = 4_000
RECOVERY_MAX_CHARS = 4_000
MAX_TOOL_CALLS = 200


class ExecutionReport(models.Model):
    """One execution outcome reported by an agent. Append-only; never holds raw messages."""

    class Outcome(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        PARTIAL = "partial", "Partial"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="execution_reports")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="execution_reports")
    # No database constraint: the report is a permanent record and must survive the task's
    # deletion (the title/type/description are copied in for that reason).
    task = models.ForeignKey(
        Task,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    task_title = models.CharField(max_length=TASK_TITLE_MAX_CHARS, blank=True, default="")
    task_type = models.CharField(max_length=TASK_TYPE_MAX_CHARS, blank=True, default="")
    task_description = models.TextField(blank=True, default="")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error_category = models.CharField(max_length=ERROR_CATEGORY_MAX_CHARS, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    # Ordered [{"name", "status", "error"?, "duration_ms"}].
    tool_calls = models.JSONField(default=list, blank=True)
    retry_count = models.PositiveIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    quality_score = models.FloatField(null=True, blank=True)
    duration_ms = models.PositiveBigIntegerField(default=0)
    recovery = models.TextField(blank=True, default="")
    # {pattern name: count} of what redaction removed before storage (never the values).
    redactions = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(outcome__in=["succeeded", "failed", "partial"]),
                name="execution_report_outcome_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(quality_score__isnull=True)
                | (models.Q(quality_score__gte=0.0) & models.Q(quality_score__lte=10.0)),
                name="execution_report_quality_range",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "-created_at", "-id"], name="execreport_company_time"),
            models.Index(
                fields=["company", "agent", "-created_at", "-id"], name="execreport_agent_time"
            ),
            models.Index(
                fields=["company", "outcome", "-created_at", "-id"], name="execreport_outcome"
            ),
            models.Index(fields=["company", "task", "-created_at"], name="execreport_task"),
            models.Index(
                fields=["agent", "-created_at"],
                condition=models.Q(quality_score__isnull=False),
                name="execreport_agent_scored",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.outcome}: {self.task_title or self.task_type or self.pk}"


class ExecutionReportSubject(models.Model):
    """The end user an execution report's task served (:mod:`synthorg.subjects`).

    Kept beside the report, not in it: the report is append-only (a trajectory record that
    is never rewritten), while a subject's erasure must leave no row naming them. Erasing
    the subject deletes this link; the report stays, no longer attributable to anyone.
    """

    report = models.OneToOneField(
        ExecutionReport, on_delete=models.CASCADE, primary_key=True, related_name="subject_link"
    )
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=SUBJECT_MAX_CHARS, validators=[validate_subject_field])

    class Meta:
        indexes = [
            models.Index(fields=["company", "subject"], name="execreport_subject"),
        ]

    def __str__(self) -> str:
        return f"subject of report {self.report_id}"


class CaptureStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    DISABLED = "disabled", "Disabled"  # procedural learning is off for the company
    NOT_APPLICABLE = "not_applicable", "Not applicable"  # the strategy does not fire
    RUNNING = "running", "Running"
    CAPTURED = "captured", "Captured"
    SKIPPED_NO_LLM = "skipped_no_llm", "Skipped: no LLM"
    BELOW_CONFIDENCE = "below_confidence", "Below confidence"
    SKIPPED_MEMORY_LEVEL = "skipped_memory_level", "Skipped: memory level none"
    FAILED = "failed", "Failed"


class Method(models.TextChoices):
    """What produced a result: the LLM, a deterministic rule, or the input kept verbatim."""

    LLM = "llm", "LLM"
    RULE = "rule", "Rule"
    VERBATIM = "verbatim", "Verbatim"


CAPTURE_METHOD_CHOICES = [(Method.LLM.value, "LLM"), (Method.RULE.value, "Rule")]


class ExecutionCapture(DurableJob):
    """What the capture pipeline did with one report (mutable; one row per report): a
    durable job (:mod:`synthorg.jobs`) whose ``next_attempt_at`` is when the retry schedule
    runs it again (an LLM failure, or a rule lesson waiting for an LLM)."""

    Status = CaptureStatus

    report = models.OneToOneField(
        ExecutionReport, on_delete=models.PROTECT, primary_key=True, related_name="capture"
    )
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=24, choices=Status.choices)
    strategy = models.CharField(max_length=16, blank=True, default="")  # failure | success
    memory = models.ForeignKey(
        "memory.Memory",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    confidence = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=[s.value for s in CaptureStatus]),
                name="execution_capture_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(method__in=["", "llm", "rule"]),
                name="execution_capture_method_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["company", "status"], name="execcapture_company_status"),
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(next_attempt_at__isnull=False),
                name="execcapture_retry_due",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.report_id}: {self.status}"


class CaptureStatusChange(JobStatusChange):
    """One status transition of a capture. **Append-only** (a Postgres trigger rejects
    UPDATE/DELETE/TRUNCATE): the capture row holds the latest state, this the history."""

    company = models.ForeignKey(Company, on_delete=models.PROTECT, related_name="+")
    report = models.ForeignKey(
        ExecutionReport, on_delete=models.PROTECT, related_name="capture_history"
    )
    status = models.CharField(max_length=24, choices=CaptureStatus.choices)

    class Meta:
        ordering = ("report", "id")
        indexes = [models.Index(fields=["report", "id"], name="capturehist_report")]

    def __str__(self) -> str:
        return f"{self.report_id}: {self.status} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ProceduralLesson(models.Model):
    """The tiers of one PROCEDURAL memory and its provenance.

    Discovery (``memory.content``) is what retrieval embeds and ranks; activation
    (condition/action/rationale) and execution (steps) are rendered when the budget allows.
    """

    class Origin(models.TextChoices):
        FAILURE = "failure", "Failure"
        SUCCESS = "success", "Success"
        PROPAGATED = "propagated", "Propagated"

    memory = models.OneToOneField(
        "memory.Memory", on_delete=models.CASCADE, primary_key=True, related_name="lesson"
    )
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    report = models.ForeignKey(
        ExecutionReport,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="lessons",
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    propagated_from = models.ForeignKey(
        "memory.Memory",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="propagated_copies",
    )
    skill_name = models.CharField(max_length=64)
    discovery = models.CharField(max_length=600)
    condition = models.TextField()
    action = models.TextField()
    rationale = models.TextField()
    execution_steps = models.JSONField(default=list)
    # What the lesson advises, as data: {"situation": {...}, "directives": [...]}
    # (memory.procedural.advice); {} for lessons written before it was stored.
    advice = models.JSONField(default=dict, blank=True)
    proposer_model = models.CharField(max_length=200, blank=True, default="")
    method = models.CharField(max_length=16, default=Method.LLM)  # llm | rule
    # The scope the proposer asked for; ``memory.scope`` is the one it was delivered at (the
    # company's propagation strategy narrows it; ``org`` stays private until approved).
    requested_scope = models.CharField(max_length=16, blank=True, default="")
    # The approval item that proposed this lesson to the org skill pool (``requested_scope``
    # org), or — on an org-pool entry — the item whose approval created it.
    org_approval_item = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(origin__in=["failure", "success", "propagated"]),
                name="procedural_lesson_origin_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(requested_scope__in=["", "agent", "role", "department", "org"]),
                name="procedural_lesson_requested_scope_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(method__in=["llm", "rule"]),
                name="procedural_lesson_method_valid",
            ),
        ]
        indexes = [models.Index(fields=["company", "report"], name="lesson_company_report")]

    def __str__(self) -> str:
        return self.skill_name


class CompressedExperience(models.Model):
    """Tier 2 of the GEMS two-tier compressor: one strategic learning per execution report
    (Tier 1: the report and its capture), kept only when ``compression_ratio`` reached the
    company's ``min_compression_ratio``."""

    class Method(models.TextChoices):
        LLM = "llm", "LLM"
        EXTRACTIVE = "extractive", "Extractive (no LLM)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    report = models.OneToOneField(
        ExecutionReport, on_delete=models.PROTECT, related_name="compressed"
    )
    content = models.TextField()
    raw_chars = models.PositiveIntegerField()
    compression_ratio = models.FloatField()
    compressor_version = models.CharField(max_length=32)
    method = models.CharField(max_length=16, choices=Method.choices)
    model = models.CharField(max_length=200, blank=True, default="")
    run = models.ForeignKey(
        "CompressionRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    #: the agent's procedural memory carrying the learning (searched and injected like any
    #: memory); the memory it deduplicated to when the learning repeats one (its capture's
    #: lesson); ``None`` when the agent stores nothing (level ``none``) or it was removed
    memory = models.ForeignKey(
        "memory.Memory", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-created_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(compression_ratio__gte=0.0)
                & models.Q(compression_ratio__lte=1.0),
                name="compressed_experience_ratio_range",
            ),
            models.CheckConstraint(
                condition=models.Q(method__in=["llm", "extractive"]),
                name="compressed_experience_method_valid",
            ),
            models.CheckConstraint(
                condition=~models.Q(content__regex=r"^\s*$"),
                name="compressed_experience_content_not_blank",
            ),
        ]
        indexes = [models.Index(fields=["company", "-created_at"], name="compressed_company_time")]

    def __str__(self) -> str:
        return self.content[:60]


class CompressionRun(models.Model):
    """One run of the experience compressor over a company's uncompressed reports: what was
    kept, what fell below ``min_compression_ratio`` (``skipped``: report id → ratio), what
    failed (LLM errors: those reports stay uncompressed for the next run) and what was left
    for the next run when the request's LLM budget ran out (``deferred``, ``degraded``)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    trigger = models.CharField(max_length=16)  # manual
    method = models.CharField(max_length=16)  # llm | extractive
    min_compression_ratio = models.FloatField()
    reports_seen = models.PositiveIntegerField(default=0)
    compressed = models.PositiveIntegerField(default=0)
    skipped_below_ratio = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    #: reports left for the next run because the request's LLM budget ran out
    deferred = models.PositiveIntegerField(default=0)
    skipped = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=dict, blank=True)
    #: what did not run as asked, as in search responses: ``["llm_budget_exceeded"]``
    degraded = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    class Meta:
        ordering = ("-started_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(deferred=0) | ~models.Q(degraded=[]),
                name="compression_run_deferred_says_degraded",
            ),
        ]

    def __str__(self) -> str:
        return f"compression run {self.started_at:%Y-%m-%d %H:%M}"


class OrgSkill(models.Model):
    """One approved org skill, structured (condition, action, steps, …; validated by
    :class:`memory.procedural.evolver.skill_text.SkillFields` before it is stored), never
    parsed back out of the text agents read.

    ``source`` says who proposed it; the entry agents retrieve is ``fact`` (an evolver or
    operator skill: its ``procedure`` fact, ``fact_version`` the version the structure
    describes) or ``memory`` (a lesson-pool skill: the shared PROCEDURAL memory). The id is
    that entry's id when stored, and stays the skill's id.

    ``memory`` holds no database constraint and is never cascaded: archiving the entry (the
    core deletes the memory row and keeps an archive row) must not delete the skill, and a
    restore points the skill at the restored memory. A skill whose entry is gone, superseded
    or retracted is not live (:func:`memory.procedural.skills.org_skill_live_q`).
    ``application_count`` / ``last_applied_at`` are the skill pool's counters, updated
    atomically (``F() + 1``) when an agent reports applying the skill.
    """

    class Source(models.TextChoices):
        EVOLVER = "evolver", "Skill evolver"
        LESSON_POOL = "lesson-pool", "Lesson pool"
        OPERATOR = "operator", "Operator"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    company = models.ForeignKey(Company, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=16, choices=Source.choices)
    fact = models.OneToOneField(
        OrgFact, on_delete=models.CASCADE, null=True, blank=True, related_name="skill"
    )
    fact_version = models.PositiveIntegerField(null=True, blank=True)
    memory = models.OneToOneField(
        "memory.Memory",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    approval_item = models.UUIDField(null=True, blank=True)
    name = models.CharField(max_length=64)
    discovery = models.TextField()
    condition = models.TextField()
    action = models.TextField()
    rationale = models.TextField()
    steps = models.JSONField(default=list)
    # What the skill advises, as data (memory.procedural.advice); {} when none was computed.
    advice = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField()
    pattern = models.CharField(max_length=200, blank=True, default="")
    report_count = models.PositiveIntegerField(default=0)
    agent_count = models.PositiveIntegerField(default=0)
    application_count = models.PositiveIntegerField(default=0)
    last_applied_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("created_at", "id")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(source__in=["evolver", "lesson-pool", "operator"]),
                name="org_skill_source_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(source="lesson-pool", memory__isnull=False, fact__isnull=True)
                | (
                    ~models.Q(source="lesson-pool")
                    & models.Q(fact__isnull=False, memory__isnull=True)
                ),
                name="org_skill_entry_matches_source",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0.0) & models.Q(confidence__lte=1.0),
                name="org_skill_confidence_range",
            ),
        ]
        indexes = [models.Index(fields=["company", "created_at"], name="org_skill_company")]

    def __str__(self) -> str:
        return self.name
