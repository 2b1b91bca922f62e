"""Running the experience compressor for a company (GEMS two-tier, seed 003).

Each uncompressed execution report of the company (newest first, at most :data:`RUN_LIMIT`
a run) is rendered as its raw trace (the report and its capture's lesson) and compressed
into one strategic learning — by the company's LLM when one is configured (``method:
llm``), else extractively (``method: extractive``, :func:`~memory.procedural.compression.
extractive_learning`). A learning whose compression ratio is below the company's
``min_compression_ratio`` is not kept: the run records the report and its ratio under
``skipped``. An LLM error leaves the report uncompressed (``failed``, the reason under
``errors``) for the next run; it is never replaced by an extractive learning behind the
caller's back.

Each learning kept is also stored as a procedural memory of the report's agent
(:func:`_store_learnings`), so search and context injection find it. Besides the operators'
REST call, the compressor runs on the company's consolidation interval
(:mod:`memory.procedural.schedules`, ``trigger: schedule``, on the LLM cluster, with no
request budget).

The run is asked for inside an HTTP request, so with an LLM it is bounded like every
request-time LLM call (Search-and-Ask, re-ranking): it runs while holding one of the
company's LLM slots (:mod:`synthorg.llm.slots`) — every slot taken ⇒ nothing runs,
:class:`~synthorg.llm.slots.LLMSlotsBusyError` (503 ``llm_slots_busy``, ``Retry-After``) —
and its LLM calls share the request's ``deadline``: once it passes no further call starts,
a call in flight is cut at it, and the reports not compressed yet stay for the next run
(``deferred``, ``degraded: ["llm_budget_exceeded"]``); what was compressed is kept.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.llm import completion_provider_for
from memory.core.services.store import memory_store_batch
from memory.procedural import compression
from memory.procedural.models import (
    CompressedExperience,
    CompressionRun,
    ExecutionReport,
    ExecutionReportSubject,
    ProceduralLesson,
)
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory
from synthorg.errors import ConflictError
from synthorg.llm import LLMError
from synthorg.llm.slots import LLMSlotsBusyError, company_llm_slot
from synthorg.llm.structured import complete_json, json_schema_format

logger = logging.getLogger("memory.procedural")

RUN_LIMIT = 200
LEARNING_SOURCE = "experience_compressor"
LEARNING_TAGS = ("compressed-experience", "non-inferable")
LEARNING_CONTEXT = "Strategic learning compressed from execution report {report}."
LLM_BUDGET_EXCEEDED = "llm_budget_exceeded"
COMPRESSOR_DISABLED = (
    "The experience compressor is disabled for this company "
    "(memory.consolidation.experience_compressor.enabled)."
)
_FORMAT = json_schema_format(
    "strategic_learning",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["learning"],
        "properties": {"learning": {"type": "string", "maxLength": compression.LEARNING_MAX}},
    },
)
REPORT_FIELDS = (
    "id",
    "agent_id",
    "task_title",
    "task_type",
    "outcome",
    "error_category",
    "error_message",
    "tool_calls",
    "retry_count",
    "turn_count",
    "duration_ms",
    "quality_score",
    "recovery",
)


def author_lessons(report_ids) -> dict:
    """The author's own lesson of each report (not propagated copies or pool entries)."""
    rows = (
        ProceduralLesson.objects.filter(
            report_id__in=report_ids,
            origin__in=[ProceduralLesson.Origin.FAILURE, ProceduralLesson.Origin.SUCCESS],
            memory__is_shared=False,
        )
        .order_by("created_at")
        .values("report_id", "discovery", "condition", "action", "rationale", "execution_steps")
    )
    return {row["report_id"]: row for row in rows}


def experience_compress_run(
    *,
    company: Company,
    trigger: str = "manual",
    now: datetime | None = None,
    deadline: float | None = None,
) -> CompressionRun:
    """One compressor run; 409 ``experience_compressor_disabled`` when it is off, 503
    ``llm_slots_busy`` when an LLM is configured and every LLM slot of the company is taken.
    ``deadline`` (a :func:`time.monotonic` instant: the request's LLM budget) bounds the LLM
    calls (see the module docstring)."""
    config = company_config(company).memory.consolidation.experience_compressor
    if not config.enabled:
        raise ConflictError(COMPRESSOR_DISABLED, code="experience_compressor_disabled")
    provider = completion_provider_for(company=company)
    try:
        if provider is None:
            return _compress(company=company, trigger=trigger, now=now, provider=None)
        with company_llm_slot(company.pk) as slot:
            if not slot:
                raise LLMSlotsBusyError()
            return _compress(
                company=company, trigger=trigger, now=now, provider=provider, deadline=deadline
            )
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()


def _compress(*, company, trigger, now, provider, deadline=None) -> CompressionRun:
    config = company_config(company).memory.consolidation.experience_compressor
    started = now or timezone.now()
    run = CompressionRun(
        company=company,
        trigger=trigger,
        method="llm" if provider is not None else "extractive",
        min_compression_ratio=config.min_compression_ratio,
        started_at=started,
        finished_at=started,
    )
    reports = list(
        ExecutionReport.objects.filter(company=company, compressed__isnull=True)
        .order_by("-created_at", "-id")
        .values(*REPORT_FIELDS)[:RUN_LIMIT]
    )
    lessons = author_lessons([r["id"] for r in reports])
    kept: list[CompressedExperience] = []
    for position, report in enumerate(reports):
        lesson = lessons.get(report["id"])
        raw = compression.raw_trace(report, lesson)
        model = ""
        if provider is None:
            learning = compression.extractive_learning(report, lesson)
        else:
            if deadline is not None and time.monotonic() >= deadline:
                _budget_spent(run, left=len(reports) - position)
                break
            try:
                completion = complete_json(
                    provider,
                    compression.compressor_messages(raw),
                    response_format=_FORMAT,
                    model=config.model,
                    temperature=config.temperature,
                    max_tokens=config.max_tokens,
                    deadline=deadline,
                )
                learning = compression.parse_learning(
                    completion.content, truncated=completion.finish_reason == "length"
                )
                model = completion.model
            except LLMError as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    # cut at the budget: not the report's failure, left for the next run
                    _budget_spent(run, left=len(reports) - position)
                    break
                _failed(run, report, exc)
                continue
            except compression.CompressionError as exc:
                _failed(run, report, exc)
                continue
        run.reports_seen += 1
        ratio = compression.compression_ratio(raw, learning)
        if ratio < config.min_compression_ratio:
            run.skipped_below_ratio += 1
            run.skipped[str(report["id"])] = ratio
            continue
        kept.append(
            CompressedExperience(
                company=company,
                agent_id=report["agent_id"],
                report_id=report["id"],
                content=learning,
                raw_chars=len(raw),
                compression_ratio=ratio,
                compressor_version=compression.COMPRESSOR_VERSION,
                method=run.method,
                model=model,
                created_at=started,
            )
        )
    run.compressed = len(kept)
    run.finished_at = max(timezone.now(), started)
    with transaction.atomic():
        run.save()
        for experience in kept:
            experience.run = run
        # A concurrent run may have compressed a report meanwhile: the unique report wins.
        CompressedExperience.objects.bulk_create(kept, ignore_conflicts=True)
        _store_learnings(run)
    logger.info(
        "EXPERIENCE_COMPRESSION company=%s method=%s seen=%d kept=%d below_ratio=%d failed=%d "
        "deferred=%d",
        company.slug,
        run.method,
        run.reports_seen,
        run.compressed,
        run.skipped_below_ratio,
        run.failed,
        run.deferred,
    )
    return run


def _store_learnings(run: CompressionRun) -> None:
    """Tier 2 is what agents see (seed 003: "the entries agents see during context
    injection — raw traces are NOT injected"): each learning this run kept is stored as a
    procedural memory of its agent (tags ``compressed-experience``, ``non-inferable``),
    through the one write path, so search and context find it like any memory."""
    rows = list(
        CompressedExperience.objects.filter(run=run)
        .select_related("agent__company")
        .order_by("agent_id", "created_at", "id")
    )
    # a learning from a report that served an end user is about them: erased with them
    subjects = dict(
        ExecutionReportSubject.objects.filter(
            report_id__in=[row.report_id for row in rows]
        ).values_list("report_id", "subject")
    )
    by_agent: dict[int, list[CompressedExperience]] = {}
    for row in rows:
        by_agent.setdefault(row.agent_id, []).append(row)
    for experiences in by_agent.values():
        agent = experiences[0].agent
        requests = [
            MemoryStoreRequest(
                content=experience.content,
                category=MemoryCategory.PROCEDURAL,
                source=LEARNING_SOURCE,
                tags=LEARNING_TAGS,
                context=LEARNING_CONTEXT.format(report=experience.report_id),
                subject=subjects.get(experience.report_id),
            )
            for experience in experiences
        ]
        results = memory_store_batch(agent=agent, requests=requests, persistent=True)
        for experience, result in zip(experiences, results, strict=True):
            if result.id is not None:
                experience.memory_id = result.id
                experience.save(update_fields=["memory"])


def _failed(run: CompressionRun, report: dict, exc: Exception) -> None:
    run.reports_seen += 1
    run.failed += 1
    run.errors[str(report["id"])] = f"{type(exc).__name__}: {exc}"[:300]


def _budget_spent(run: CompressionRun, *, left: int) -> None:
    run.deferred = left
    run.degraded = [LLM_BUDGET_EXCEEDED]
