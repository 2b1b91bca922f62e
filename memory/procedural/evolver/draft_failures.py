"""Recording failed drafts: the :class:`DraftFailure` row, its retry policy and its history.

A draft that fails for an LLM reason (an outage, a 429, a model the provider does not
serve, an answer that is not a proposal) is attempt 1 of at most :data:`MAX_ATTEMPTS`; the
``jobs-evolver.draft`` schedule runs the next one after :data:`DRAFT_POLICY`'s back-off
(1, 2, 4 … min, at most an hour — the one policy of :mod:`synthorg.jobs`, as for lesson
captures). Every transition appends a :class:`DraftStatusChange` row.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from memory.procedural.evolver.models import (
    DraftFailure,
    DraftStatus,
    DraftStatusChange,
    EvolverReport,
)
from synthorg.jobs.history import history_writer
from synthorg.jobs.policy import RetryPolicy
from synthorg.llm import LLMError

REASON_MAX = 1000
MAX_ATTEMPTS = 8
DRAFT_POLICY = RetryPolicy(max_attempts=MAX_ATTEMPTS)


def failure_reason(exc: Exception) -> str:
    """What the user needs to read: the LLM client's own message (it names the HTTP status
    and the provider's text: "HTTP 404: The model `x` does not exist", "HTTP 429: Rate
    limit reached …", "no model to ask: …") or the proposer's ("invalid JSON from proposer:
    …")."""
    if isinstance(exc, LLMError):
        return f"{type(exc).__name__}: {exc}"[:REASON_MAX]
    return str(getattr(exc, "reason", exc))[:REASON_MAX]


#: ``draft_history_record(draft, now=…, reason=None, actor="")``: append the draft's current
#: status (``reason`` overrides the row's) to its history.
draft_history_record = history_writer(DraftStatusChange, "draft")


def draft_failure_open(
    *, report: EvolverReport, pattern: str, reason: str, now: datetime
) -> DraftFailure | None:
    """Record attempt 1 of ``pattern``'s draft as failed in ``report``'s run (saved), due
    again after the policy's first back-off. ``None`` when the pattern already has an open
    record (another run recorded it meanwhile: the unique constraint decides)."""
    draft = DraftFailure(
        company_id=report.company_id,
        pattern=pattern,
        report=report,
        status=DraftStatus.PENDING,
        attempts=1,
        next_attempt_at=now + DRAFT_POLICY.delay(1),
        reason=reason[:REASON_MAX],
        created_at=now,
        updated_at=now,
    )
    try:
        with transaction.atomic():
            draft.save(force_insert=True)
            draft_history_record(draft, now=now)
    except IntegrityError:
        return None
    return draft
