"""The status history of captures: one append-only row per transition."""

from __future__ import annotations

from memory.procedural.models import CaptureStatusChange
from synthorg.jobs.history import history_writer

#: ``capture_history_record(capture, now=…, reason=None, actor="")``: append the capture's
#: current status (with its method, attempt count and reason) to its history.
capture_history_record = history_writer(CaptureStatusChange, "report")
