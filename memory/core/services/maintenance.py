"""Memory maintenance: retention → consolidation → archival → max-memories enforcement.

:class:`MemoryConsolidationService` follows the seed's service of that name;
:func:`run_maintenance` is the entry point the q2 tasks and the management command call.
Each run of one agent is recorded as a :class:`MaintenanceRun` (counts per step, errors).

* **Kill switch** — ``memory.consolidation.enabled: false`` pauses the whole cycle: nothing
  is touched and the run is recorded as ``skipped``.
Nothing is destroyed by default: every step *archives* what it removes from the hot store
(:func:`~memory.core.services.archive.memories_archive_out`: whole, restorable by original id,
shared entries retracted with a ``memory.shared_retracted`` audit record). The one exception
is a retention rule an operator wrote with ``action: delete``.

* **Retention** — per category, the days and action resolved by
  :mod:`memory.core.consolidation.retention` (agent rule → company rule → agent default →
  company default → forever); ``archive`` moves the memories past their days into the archive,
  ``delete`` deletes them for good — and the category's archived rows past the same days —
  with one ``memory.retention_deleted`` audit record listing the ids. The agent's core
  memory (tag ``core``) is touched only by a rule that names the category ``core``
  (:mod:`memory.core.consolidation.retention`). Each category in its
  own savepoint, so one failing category does not stop the others; at most ``batch_size``
  rows per category per run, so a large backlog is worked off over several runs. Memories
  whose ``expires_at`` has passed are archived (same bound).
* **Consolidation** (``archival.enabled``) — the agent's live, private, persistent memories
  (not its core memory) older than ``archival.age_threshold_days`` (at most ``batch_size``
  of them, oldest first) are planned by the configured strategy (``simple`` /
  ``dual_mode`` / ``llm``); each chunk is applied in one transaction: the summary,
  embedded before the chunk's rows are locked, is stored through ``memory_store_batch``
  (searchable; the run's audit entry lists it) and the removed memories are archived
  whole. A chunk whose rows changed meanwhile is skipped.
* **Max memories** — if the agent still holds more than ``max_memories_per_agent``
  memories, the oldest are archived, ``batch_size`` per transaction; the agent's live core
  memory (tag ``core``) is never among them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.db import connection, transaction
from django.utils import timezone
from pydantic import ValidationError

from memory.core.consolidation.abstractive import AbstractiveSummarizer
from memory.core.consolidation.density import DensityClassifier
from memory.core.consolidation.extractive import ExtractivePreserver
from memory.core.consolidation.models import (
    ArchivalIndexEntry,
    ArchivalMode,
    ArchivalModeAssignment,
    ConsolidationEntry,
    ConsolidationResult,
)
from memory.core.consolidation.retention import RetentionDecision, resolve_all
from memory.core.consolidation.strategies import (
    ConsolidationStrategy,
    DualModeStrategy,
    GroupPlan,
    LLMStrategy,
    SimpleStrategy,
)
from memory.core.domain import CORE_TAG, MemoryStoreRequest
from memory.core.extensions import company_maintained_handlers
from memory.core.llm import completion_provider_for
from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.services.archive import CapOutcome, memories_archive_out, memories_enforce_cap
from memory.core.services.store import memory_store_batch, memory_store_embed
from persistence.audit_actions import AuditAction
from persistence.models import Agent, AuditEntry, Company
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.company_config.memory import (
    AgentRetentionOverrides,
    ConsolidationConfig,
    ConsolidationStrategyType,
    RetentionAction,
    RetentionCategory,
)
from synthorg.embedding import Embedder
from synthorg.enums import MemoryCategory, MemoryLevel
from synthorg.llm import CompletionProvider

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1000
SUMMARY_SOURCE = "consolidation"
SUMMARY_TAG = "consolidated"
GROUP_CHANGED = "consolidation of {namespace}/{category} skipped: its memories changed meanwhile"
INVALID_OVERRIDES = "the agent's retention_overrides are invalid and were ignored: {error}"
ARCHIVAL_OFF = "consolidation skipped: archival.enabled is false (old memories stay live)"
CONSOLIDATED_REASON = "consolidated into a summary"
RETENTION_REASON = "past its retention of {days} days ({source})"
EXPIRED_REASON = "past its expires_at"
CAPPED_REASON = "over max_memories_per_agent ({limit})"
NOT_PERSISTENT = "consolidation skipped: the agent's memory level is {level!r}, not 'persistent'"
ALREADY_RUNNING = "another maintenance run of this agent is in progress"
# pg advisory-lock namespace for "maintenance of agent <id>" (two-int form: class, agent id).
_LOCK_CLASS = 0x4D454D  # "MEM"


@dataclass
class RetentionOutcome:
    archived_by_category: dict[str, int] = field(default_factory=dict)
    deleted_by_category: dict[str, int] = field(default_factory=dict)
    archive_deleted_by_category: dict[str, int] = field(default_factory=dict)
    expired_archived: int = 0
    shared_retracted: int = 0
    decisions: dict[str, dict[str, int | str | None]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def retention_archived(self) -> int:
        return sum(self.archived_by_category.values())

    @property
    def retention_deleted(self) -> int:
        return sum(self.deleted_by_category.values())

    @property
    def archive_deleted(self) -> int:
        return sum(self.archive_deleted_by_category.values())


@dataclass
class ConsolidationOutcome:
    result: ConsolidationResult = field(default_factory=ConsolidationResult)
    scanned: int = 0
    errors: list[str] = field(default_factory=list)
    methods: dict[str, int] = field(default_factory=dict)
    skipped_reason: str | None = None


@dataclass
class MaintenanceReport:
    agent_id: int
    status: str
    run_id: int | None = None
    dry_run: bool = False
    retention: RetentionOutcome = field(default_factory=RetentionOutcome)
    consolidation: ConsolidationOutcome = field(default_factory=ConsolidationOutcome)
    cap: CapOutcome = field(default_factory=CapOutcome)
    memories_before: int = 0
    memories_after: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        """The run's counts (the :class:`MaintenanceRun` columns of the same names)."""
        result = self.consolidation.result
        retention = self.retention
        return {
            "retention_archived": retention.retention_archived,
            "retention_deleted": retention.retention_deleted,
            "archive_deleted": retention.archive_deleted,
            "expired_archived": retention.expired_archived,
            "consolidated": result.consolidated_count,
            "summaries_created": len(result.summary_ids),
            "enforced_archived": self.cap.archived,
            "shared_retracted": retention.shared_retracted + self.cap.shared_retracted,
            "archived": (
                retention.retention_archived
                + retention.expired_archived
                + result.archived_count
                + self.cap.archived
            ),
            "deleted": retention.retention_deleted + retention.archive_deleted,
        }

    @property
    def processed(self) -> int:
        """Memories removed from the hot store (archived or deleted) or from the archive."""
        counts = self.counts
        return counts["archived"] + counts["deleted"]


def agent_overrides(agent: Agent) -> tuple[AgentRetentionOverrides | None, str | None]:
    try:
        return AgentRetentionOverrides.model_validate(agent.retention_overrides or {}), None
    except ValidationError as exc:
        return None, INVALID_OVERRIDES.format(error=exc.errors()[0]["msg"])


class RetentionEnforcer:
    """Archives (or, under an explicit ``action: delete`` rule, deletes) an agent's memories
    past their category's retention, and archives expired ones."""

    def __init__(self, *, config: ConsolidationConfig, batch_size: int = DEFAULT_BATCH_SIZE):
        self.config = config
        self.batch_size = batch_size

    def cleanup_expired(
        self,
        agent: Agent,
        *,
        now: datetime,
        overrides: AgentRetentionOverrides | None = None,
        run: MaintenanceRun | None = None,
    ) -> RetentionOutcome:
        outcome = RetentionOutcome()
        decisions = resolve_all(company=self.config.retention, agent=overrides)
        for category, decision in decisions.items():
            outcome.decisions[category.value] = {
                "days": decision.days,
                "action": decision.action.value if decision.days is not None else None,
                "source": decision.source.value,
            }
            if decision.days is None:
                continue
            try:
                with transaction.atomic():
                    if decision.action is RetentionAction.DELETE:
                        self._delete_category(agent, decision, now=now, run=run, outcome=outcome)
                    else:
                        self._archive_category(agent, decision, now=now, run=run, outcome=outcome)
            except Exception as exc:  # isolate the category; the others still run
                logger.exception("retention of %s for agent %s failed", category, agent.pk)
                outcome.errors.append(f"retention of {category.value} failed: {exc}")
        try:
            with transaction.atomic():
                moved = memories_archive_out(
                    agent=agent,
                    memories=self._lock_batch(
                        Memory.objects.filter(agent=agent, expires_at__lte=now)
                    ),
                    mode=ArchivalMode.EXPIRED,
                    reason=EXPIRED_REASON,
                    run=run,
                    now=now,
                )
            outcome.expired_archived = len(moved.archived)
            outcome.shared_retracted += moved.shared_retracted
        except Exception as exc:
            logger.exception("archiving expired memories of agent %s failed", agent.pk)
            outcome.errors.append(f"archiving expired memories failed: {exc}")
        return outcome

    def _past(self, agent: Agent, decision: RetentionDecision, *, now: datetime):
        """The memories past the rule's days. The agent's core memory (tag ``core``, current
        and superseded versions) only under a rule that names ``core``, counting from its
        last change (an entry is edited in place): a category rule or a default never takes
        it."""
        assert decision.days is not None  # only rules with days are applied
        cutoff = now - timedelta(days=decision.days)
        if decision.category == RetentionCategory.CORE:
            return Memory.objects.filter(agent=agent, tags__contains=[CORE_TAG]).filter(
                updated_at__lt=cutoff
            )
        return Memory.objects.filter(
            agent=agent, category=decision.category, created_at__lt=cutoff
        ).exclude(tags__contains=[CORE_TAG])

    def _archived_past(self, agent: Agent, decision: RetentionDecision, *, now: datetime):
        """The archived rows an ``action: delete`` rule deletes: the same memories as
        :meth:`_past`, by the day they were written."""
        assert decision.days is not None  # only rules with days are applied
        rows = ArchivedMemory.objects.filter(
            agent=agent, created_at__lt=now - timedelta(days=decision.days)
        )
        if decision.category == RetentionCategory.CORE:
            return rows.filter(tags__contains=[CORE_TAG])
        return rows.filter(category=decision.category).exclude(tags__contains=[CORE_TAG])

    def _archive_category(
        self,
        agent: Agent,
        decision: RetentionDecision,
        *,
        now: datetime,
        run: MaintenanceRun | None,
        outcome: RetentionOutcome,
    ) -> None:
        moved = memories_archive_out(
            agent=agent,
            memories=self._lock_batch(self._past(agent, decision, now=now)),
            mode=ArchivalMode.RETENTION,
            reason=RETENTION_REASON.format(days=decision.days, source=decision.source.value),
            run=run,
            now=now,
        )
        if moved.archived:
            outcome.archived_by_category[decision.category.value] = len(moved.archived)
        outcome.shared_retracted += moved.shared_retracted

    def _delete_category(
        self,
        agent: Agent,
        decision: RetentionDecision,
        *,
        now: datetime,
        run: MaintenanceRun | None,
        outcome: RetentionOutcome,
    ) -> None:
        """The operator's explicit ``action: delete``: the live memories past the days and
        the category's archived ones past the same days are deleted for good, audited once
        (``memory.retention_deleted``, with every id) in the same transaction."""
        category = decision.category.value
        rows = self._lock_batch(self._past(agent, decision, now=now))
        archive_ids = list(
            self._archived_past(agent, decision, now=now)
            .select_for_update(skip_locked=True)
            .order_by("created_at", "id")
            .values_list("id", flat=True)[: self.batch_size]
        )
        if not rows and not archive_ids:
            return
        shared = [str(m.pk) for m in rows if m.is_shared]
        audit_record(
            company=agent.company,
            action_type=AuditAction.MEMORY_RETENTION_DELETED,
            target_type="agent",
            target_id=agent.pk,
            risk_level=AuditEntry.RiskLevel.MEDIUM,
            details={
                "category": category,
                "retention_days": decision.days,
                "rule": decision.source.value,
                "run_id": run.pk if run is not None and run.pk else None,
                "memory_ids": [str(m.pk) for m in rows],
                "shared_memory_ids": shared,
                "archive_ids": [str(i) for i in archive_ids],
            },
        )
        Memory.objects.filter(pk__in=[m.pk for m in rows]).delete()
        ArchivedMemory.objects.filter(pk__in=archive_ids).delete()
        if rows:
            outcome.deleted_by_category[category] = len(rows)
        if archive_ids:
            outcome.archive_deleted_by_category[category] = len(archive_ids)

    def _lock_batch(self, rows) -> list[Memory]:
        """The oldest ``batch_size`` of ``rows``, locked (rows another transaction holds are
        left for the next run)."""
        return list(
            rows.select_for_update(skip_locked=True).order_by("created_at", "id")[: self.batch_size]
        )


def build_strategy(
    config: ConsolidationConfig, provider: CompletionProvider | None
) -> ConsolidationStrategy:
    llm = config.llm
    if config.strategy is ConsolidationStrategyType.DUAL_MODE:
        dual = config.archival.dual_mode
        return DualModeStrategy(
            classifier=DensityClassifier(dense_threshold=dual.dense_threshold),
            preserver=ExtractivePreserver(
                max_facts=dual.max_facts, anchor_length=dual.anchor_length
            ),
            summarizer=AbstractiveSummarizer(
                provider=provider,
                model=dual.summarization_model,
                max_summary_tokens=dual.max_summary_tokens,
            ),
            group_threshold=config.group_threshold,
        )
    if config.strategy is ConsolidationStrategyType.LLM:
        return LLMStrategy(
            summarizer=AbstractiveSummarizer(
                provider=provider,
                max_summary_tokens=llm.max_summary_tokens,
                temperature=llm.temperature,
            ),
            group_threshold=max(config.group_threshold, llm.group_threshold),
            max_entry_input_chars=llm.max_entry_input_chars,
            max_total_user_content_chars=llm.max_total_user_content_chars,
            fallback_truncate_length=llm.fallback_truncate_length,
        )
    return SimpleStrategy(
        group_threshold=config.group_threshold, truncate_length=llm.fallback_truncate_length
    )


class MemoryConsolidationService:
    """Retention, consolidation, archival and max-memories enforcement for one company's
    agents (the seed's service, synchronous and over Postgres)."""

    def __init__(
        self,
        *,
        config: ConsolidationConfig,
        provider: CompletionProvider | None = None,
        embedder: Embedder | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.config = config
        self.provider = provider
        self.embedder = embedder
        self.batch_size = batch_size

    # --- steps -------------------------------------------------------------------------

    def cleanup_retention(
        self,
        agent: Agent,
        *,
        now: datetime,
        overrides: AgentRetentionOverrides | None = None,
        run: MaintenanceRun | None = None,
    ) -> RetentionOutcome:
        enforcer = RetentionEnforcer(config=self.config, batch_size=self.batch_size)
        return enforcer.cleanup_expired(agent, now=now, overrides=overrides, run=run)

    def candidates(self, agent: Agent, *, now: datetime) -> list[Memory]:
        cutoff = now - timedelta(days=self.config.archival.age_threshold_days)
        rows = (
            Memory.objects.live(now)
            .filter(
                agent=agent,
                is_shared=False,
                level=Memory.Level.PERSISTENT,
                created_at__lt=cutoff,
                # an end user's memories are never merged into a summary: it would mix one
                # person's facts with others' and outlive their erasure
                subject="",
            )
            .exclude(tags__contains=[CORE_TAG])  # the core block is edited, not summarised
            .order_by("created_at", "id")
            .only("id", "namespace", "category", "content", "created_at", "confidence")
        )
        return list(rows[: self.batch_size])

    def run_consolidation(
        self, agent: Agent, *, now: datetime, run: MaintenanceRun | None = None
    ) -> ConsolidationOutcome:
        outcome = ConsolidationOutcome()
        if not self.config.archival.enabled:
            outcome.skipped_reason = ARCHIVAL_OFF
            return outcome
        if agent.memory_level != MemoryLevel.PERSISTENT:
            # Session/project memories have their own lifecycle (session end, project close).
            outcome.skipped_reason = NOT_PERSISTENT.format(level=agent.memory_level)
            return outcome
        rows = self.candidates(agent, now=now)
        outcome.scanned = len(rows)
        entries = [
            ConsolidationEntry(
                id=row.pk,
                namespace=row.namespace,
                category=MemoryCategory(row.category),
                content=row.content,
                created_at=row.created_at,
                confidence=row.confidence,
            )
            for row in rows
        ]
        plan = build_strategy(self.config, self.provider).plan(entries)
        outcome.errors.extend(plan.errors)
        removed: list[UUID] = []
        summaries: list[UUID] = []
        assignments: list[ArchivalModeAssignment] = []
        index: list[ArchivalIndexEntry] = []
        for group in plan.groups:
            try:
                summary_id, archived = self._apply_group(agent, group, now=now, run=run)
            except _GroupChanged:
                outcome.errors.append(
                    GROUP_CHANGED.format(namespace=group.namespace, category=group.category)
                )
                continue
            except Exception as exc:
                logger.exception("consolidation of a group of agent %s failed", agent.pk)
                outcome.errors.append(
                    f"consolidation of {group.namespace}/{group.category} failed: {exc}"
                )
                continue
            removed.extend(e.id for e in group.removed)
            summaries.append(summary_id)
            assignments.extend(group.mode_assignments)
            index.extend(archived)
            outcome.methods[group.method] = outcome.methods.get(group.method, 0) + 1
        outcome.result = ConsolidationResult(
            removed_ids=tuple(removed),
            summary_ids=tuple(summaries),
            archived_count=len(index),
            mode_assignments=tuple(assignments),
            archival_index=tuple(index),
        )
        return outcome

    def _apply_group(
        self, agent: Agent, group: GroupPlan, *, now: datetime, run: MaintenanceRun | None
    ) -> tuple[UUID, list[ArchivalIndexEntry]]:
        removed_ids = [e.id for e in group.removed]
        request = MemoryStoreRequest(
            content=group.summary,
            category=MemoryCategory(group.category),
            namespace=group.namespace,
            source=SUMMARY_SOURCE,
            confidence=group.kept.confidence,
            tags=(SUMMARY_TAG, f"strategy:{self.config.strategy.value}"),
            context=f"Summary of {len(removed_ids)} consolidated memories ({group.method}).",
        )
        # Embedded before the group's rows are locked: the agent's own updates of them must
        # not wait for the embedder.
        embeddings = memory_store_embed(agent=agent, requests=[request], embedder=self.embedder)
        with transaction.atomic():
            rows = list(
                Memory.objects.select_for_update()
                .filter(id__in=removed_ids, agent=agent, superseded_at__isnull=True)
                .order_by("created_at", "id")
            )
            expected = {e.id: e.content for e in group.removed}
            if len(rows) != len(removed_ids) or any(
                expected[row.pk] != row.content for row in rows
            ):
                raise _GroupChanged
            (stored,) = memory_store_batch(
                agent=agent,
                requests=[request],
                now=now,
                deduplicate=False,
                embeddings=embeddings,
                audit=False,  # the run's memory.maintenance_run entry lists the summaries
            )
            moved = memories_archive_out(
                agent=agent,
                memories=rows,
                mode=group.mode,
                reason=CONSOLIDATED_REASON,
                summary_memory_id=stored.id,
                run=run,
                now=now,
            )
            index = [
                ArchivalIndexEntry(
                    original_id=a.original_id, archival_id=a.pk, mode=ArchivalMode(a.mode)
                )
                for a in moved.archived
            ]
        # deduplicate=False under the lock: the summary is always written as a new row
        assert stored.id is not None
        return stored.id, index

    def enforce_max_memories(
        self, agent: Agent, *, now: datetime, run: MaintenanceRun | None = None
    ) -> CapOutcome:
        """The per-agent cap (:func:`~memory.core.services.archive.memories_enforce_cap`,
        the one policy extraction's bounded growth applies too)."""
        limit = self.config.max_memories_per_agent
        return memories_enforce_cap(
            agent=agent,
            limit=limit,
            reason=CAPPED_REASON.format(limit=limit),
            now=now,
            run=run,
            batch_size=self.batch_size,
        )

    # --- the cycle ---------------------------------------------------------------------

    def run_maintenance(
        self,
        agent: Agent,
        *,
        now: datetime | None = None,
        trigger: str = MaintenanceRun.Trigger.MANUAL,
        record: bool = True,
    ) -> MaintenanceReport:
        now = now or timezone.now()
        started = time.perf_counter()
        run = None
        if record:
            run = MaintenanceRun.objects.create(
                company_id=agent.company_id,
                agent=agent,
                trigger=trigger,
                strategy=self.config.strategy.value,
                started_at=now,
            )
        report = MaintenanceReport(agent_id=agent.pk, status=MaintenanceRun.Status.RUNNING)
        report.run_id = run.pk if run else None
        if not self.config.enabled:
            report.status = MaintenanceRun.Status.SKIPPED
            return self._finish(report, run, agent, started)
        if not _try_lock(agent):
            report.status = MaintenanceRun.Status.SKIPPED
            report.errors.append(ALREADY_RUNNING)
            return self._finish(report, run, agent, started)
        try:
            self._cycle(agent, report, now=now, run=run)
        finally:
            _unlock(agent)
        return self._finish(report, run, agent, started)

    def _cycle(
        self, agent: Agent, report: MaintenanceReport, *, now: datetime, run: MaintenanceRun | None
    ) -> None:
        report.memories_before = Memory.objects.filter(agent=agent).count()
        overrides, problem = agent_overrides(agent)
        if problem:
            report.errors.append(problem)
        steps_failed = 0
        try:
            report.retention = self.cleanup_retention(agent, now=now, overrides=overrides, run=run)
        except Exception as exc:
            logger.exception("retention step failed for agent %s", agent.pk)
            report.errors.append(f"retention failed: {exc}")
            steps_failed += 1
        try:
            report.consolidation = self.run_consolidation(agent, now=now, run=run)
        except Exception as exc:
            logger.exception("consolidation step failed for agent %s", agent.pk)
            report.errors.append(f"consolidation failed: {exc}")
            steps_failed += 1
        try:
            report.cap = self.enforce_max_memories(agent, now=now, run=run)
        except Exception as exc:
            logger.exception("max-memories step failed for agent %s", agent.pk)
            report.errors.append(f"max-memories enforcement failed: {exc}")
            steps_failed += 1
        report.errors.extend(report.retention.errors)
        report.errors.extend(report.consolidation.errors)
        report.memories_after = Memory.objects.filter(agent=agent).count()
        if steps_failed == 3:
            report.status = MaintenanceRun.Status.FAILED
        elif report.errors:
            report.status = MaintenanceRun.Status.PARTIAL
        else:
            report.status = MaintenanceRun.Status.SUCCEEDED

    def _finish(
        self, report: MaintenanceReport, run: MaintenanceRun | None, agent: Agent, started: float
    ) -> MaintenanceReport:
        report.seconds = time.perf_counter() - started
        if run is None:
            return report
        counts = report.counts
        result = report.consolidation.result
        MaintenanceRun.objects.filter(pk=run.pk).update(
            status=report.status,
            finished_at=max(timezone.now(), run.started_at),
            scanned=report.consolidation.scanned,
            errors=report.errors,
            details={
                "memories_before": report.memories_before,
                "memories_after": report.memories_after,
                "retention": report.retention.decisions,
                "retention_archived_by_category": report.retention.archived_by_category,
                "retention_deleted_by_category": report.retention.deleted_by_category,
                "archive_deleted_by_category": report.retention.archive_deleted_by_category,
                "summary_methods": report.consolidation.methods,
                "consolidation_skipped": report.consolidation.skipped_reason,
                "summary_ids": [str(i) for i in result.summary_ids],
                "archival_index": [e.model_dump(mode="json") for e in result.archival_index],
            },
            **counts,
        )
        if report.status != MaintenanceRun.Status.SKIPPED and report.processed:
            audit_record(
                company=agent.company,
                action_type=AuditAction.MEMORY_MAINTENANCE_RUN,
                target_type="agent",
                target_id=agent.pk,
                details={"run_id": run.pk, **counts},
            )
        return report


class _GroupChanged(Exception):
    pass


def _try_lock(agent: Agent) -> bool:
    """One maintenance cycle per agent at a time (schedule, command and API may overlap)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_CLASS, agent.pk])
        return bool(cursor.fetchone()[0])


def _unlock(agent: Agent) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_CLASS, agent.pk])


def run_maintenance(
    *,
    agent: Agent,
    now: datetime | None = None,
    trigger: str = MaintenanceRun.Trigger.MANUAL,
    dry_run: bool = False,
    provider: CompletionProvider | None = None,
    embedder: Embedder | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> MaintenanceReport:
    """Run one maintenance cycle for ``agent`` with its company's current config.

    ``provider`` defaults to the configured LLM (``None`` when unconfigured). A dry run does
    the whole cycle inside a transaction that is rolled back, without calling the LLM (so
    summaries are truncations) and without recording a run.
    """
    config = company_config(agent.company).memory.consolidation
    if dry_run:
        service = MemoryConsolidationService(
            config=config, provider=None, embedder=embedder, batch_size=batch_size
        )
        with transaction.atomic():
            report = service.run_maintenance(agent, now=now, trigger=trigger, record=False)
            report.dry_run = True
            transaction.set_rollback(True)
        return report
    if provider is None:
        provider = completion_provider_for(company=agent.company, agent=agent)
    service = MemoryConsolidationService(
        config=config, provider=provider, embedder=embedder, batch_size=batch_size
    )
    return service.run_maintenance(agent, now=now, trigger=trigger)


def run_company_maintenance(
    *,
    company: Company,
    trigger: str = MaintenanceRun.Trigger.SCHEDULE,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[MaintenanceReport]:
    """Maintain every active agent of ``company``; nothing at all while the kill switch is
    off (a scheduled run of a paused company records nothing)."""
    if not company_config(company).memory.consolidation.enabled:
        logger.info("memory maintenance of company %s skipped: consolidation disabled", company)
        return []
    reports = []
    for agent in Agent.objects.filter(company=company, is_active=True).order_by("pk"):
        reports.append(run_maintenance(agent=agent, trigger=trigger, dry_run=dry_run, now=now))
    if not dry_run:
        for handler in company_maintained_handlers():
            try:
                handler(company=company, trigger=trigger)
            except Exception:  # a capability's follow-up never fails the maintenance
                logger.exception("after-maintenance handler %r failed for %s", handler, company)
    return reports
