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
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.procedural import compression
from memory.procedural.models import (
    CompressedExperience,
    CompressionRun,
    ExecutionReport,
    ProceduralLesson,
)
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.errors import ConflictError
from synthorg.llm import LLMError
from synthorg.llm.structured import complete_json, json_schema_format

logger = logging.getLogger("memory.procedural")

RUN_LIMIT = 200
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
    *, company: Company, trigger: str = "manual", now: datetime | None = None
) -> CompressionRun:
    """One compressor run; 409 ``experience_compressor_disabled`` when it is off."""
    config = company_config(company).memory.consolidation.experience_compressor
    if not config.enabled:
        raise ConflictError(COMPRESSOR_DISABLED, code="experience_compressor_disabled")
    started = now or timezone.now()
    provider = completion_provider_for(company=company)
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
    try:
        for report in reports:
            run.reports_seen += 1
            lesson = lessons.get(report["id"])
            raw = compression.raw_trace(report, lesson)
            model = ""
            if provider is None:
                learning = compression.extractive_learning(report, lesson)
            else:
                try:
                    completion = complete_json(
                        provider,
                        compression.compressor_messages(raw),
                        response_format=_FORMAT,
                        model=config.model,
                        temperature=config.temperature,
                        max_tokens=config.max_tokens,
                    )
                    learning = compression.parse_learning(
                        completion.content, truncated=completion.finish_reason == "length"
                    )
                    model = completion.model
                except (LLMError, compression.CompressionError) as exc:
                    run.failed += 1
                    run.errors[str(report["id"])] = f"{type(exc).__name__}: {exc}"[:300]
                    continue
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
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()
    run.compressed = len(kept)
    run.finished_at = max(timezone.now(), started)
    with transaction.atomic():
        run.save()
        for experience in kept:
            experience.run = run
        # A concurrent run may have compressed a report meanwhile: the unique report wins.
        CompressedExperience.objects.bulk_create(kept, ignore_conflicts=True)
    logger.info(
        "EXPERIENCE_COMPRESSION company=%s method=%s seen=%d kept=%d below_ratio=%d failed=%d",
        company.slug,
        run.method,
        run.reports_seen,
        run.compressed,
        run.skipped_below_ratio,
        run.failed,
    )
    return run
