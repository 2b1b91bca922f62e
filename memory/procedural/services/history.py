"""The status history of captures: one append-only row per transition."""

from __future__ import annotations

from datetime import datetime

from memory.procedural.models import CaptureStatusChange, ExecutionCapture


def capture_history_record(
    capture: ExecutionCapture,
    *,
    now: datetime,
    reason: str | None = None,
    actor: str = "",
) -> CaptureStatusChange:
    """Append the capture's current status (with its method, attempt count and reason —
    ``reason`` overrides the row's) to its history."""
    return CaptureStatusChange.objects.create(
        company_id=capture.company_id,
        report_id=capture.report_id,
        status=capture.status,
        method=capture.method,
        reason=(capture.reason if reason is None else reason)[:1000],
        attempt=capture.attempts,
        actor=actor,
        created_at=now,
    )
