"""django-q2 tasks of procedural learning: thin interfaces that load by id and call a service."""

from __future__ import annotations

import logging

from memory.procedural.models import ExecutionCapture
from memory.procedural.services.capture import execution_report_capture
from memory.procedural.services.compression import experience_compress_run
from memory.procedural.services.pruning import procedural_prune_company
from persistence.models import Company
from synthorg.errors import ConflictError
from synthorg.llm.slots import LLMSlotsBusyError

logger = logging.getLogger("memory.procedural")


def capture_execution_report(report_id: str) -> str | None:
    """Run the capture pipeline for one report; returns the capture status."""
    if not ExecutionCapture.objects.filter(report_id=report_id).exists():
        return None  # unknown id (never happens for ids we enqueue)
    return execution_report_capture(report_id=report_id).status


def run_procedural_maintenance(company_id: int) -> dict | None:
    """Daily per company: prune lessons. (A capture whose task was lost is run by the retry
    dispatcher once its grace has passed: ``memory.procedural.services.reports``.)"""

    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    results = procedural_prune_company(company=company)
    return {
        "agents": len(results),
        "pruned": sum(r.pruned for r in results),
    }


def run_experience_compression(company_id: int) -> dict | None:
    """On the company's consolidation interval: one experience compressor run. Turned off
    since it was scheduled, or every LLM slot taken: nothing runs, the next tick tries."""
    company = Company.objects.filter(pk=company_id).first()
    if company is None:
        return None
    try:
        run = experience_compress_run(company=company, trigger="schedule")
    except (ConflictError, LLMSlotsBusyError) as exc:
        logger.info("EXPERIENCE_COMPRESSION_SKIPPED company=%s reason=%s", company.slug, exc)
        return {"skipped": str(exc)}
    return {"run": run.pk, "compressed": run.compressed, "failed": run.failed}
