"""Recording failed drafts: the :class:`DraftFailure` row, its back-off and its history.

A draft that fails for an LLM reason (an outage, a 429, a model the provider does not
serve, an answer that is not a proposal) is attempt 1 of at most :data:`MAX_ATTEMPTS`; the
``evolver-draft-retry`` schedule runs the next one after :func:`retry_delay` (1, 2, 4 … min,
at most an hour — the same back-off as lesson captures). Every transition appends a
:class:`DraftStatusChange` row.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from memory.procedural.evolver.models import (
    DraftFailure,
    DraftStatus,
    DraftStatusChange,
    EvolverReport,
)
from synthorg.llm import LLMError

REASON_MAX = 1000
RETRY_BASE = timedelta(minutes=1)
RETRY_MAX_DELAY = timedelta(hours=1)
MAX_ATTEMPTS = 8


def retry_delay(attempts: int) -> timedelta:
    """The wait before attempt ``attempts + 1``: 1, 2, 4 … minutes, at most an hour."""
    return min(RETRY_BASE * (2 ** max(attempts - 1, 0)), RETRY_MAX_DELAY)


def failure_reason(exc: Exception) -> str:
    """What the user needs to read: the LLM client's own message (it names the HTTP status
    and the provider's text: "HTTP 404: The model `x` does not exist", "HTTP 429: Rate
    limit reached …", "no model to ask: …") or the proposer's ("invalid JSON from proposer:
    …")."""
    if isinstance(exc, LLMError):
        return f"{type(exc).__name__}: {exc}"[:REASON_MAX]
    return str(getattr(exc, "reason", exc))[:REASON_MAX]


def draft_history_record(
    *, draft: DraftFailure, now: datetime, reason: str | None = None, actor: str = ""
) -> DraftStatusChange:
    """Append the draft's current status (``reason`` overrides the row's) to its history."""
    return DraftStatusChange.objects.create(
        company_id=draft.company_id,
        draft=draft,
        status=draft.status,
        method=draft.method,
        reason=(draft.reason if reason is None else reason)[:REASON_MAX],
        attempt=draft.attempts,
        actor=actor,
        created_at=now,
    )


def draft_failure_open(
    *, report: EvolverReport, pattern: str, reason: str, now: datetime
) -> DraftFailure | None:
    """Record attempt 1 of ``pattern``'s draft as failed in ``report``'s run (saved), due
    again after :func:`retry_delay`. ``None`` when the pattern already has an open record
    (another run recorded it meanwhile: the unique constraint decides)."""
    draft = DraftFailure(
        company_id=report.company_id,
        pattern=pattern,
        report=report,
        status=DraftStatus.PENDING,
        attempts=1,
        next_attempt_at=now + retry_delay(1),
        reason=reason[:REASON_MAX],
        created_at=now,
        updated_at=now,
    )
    try:
        with transaction.atomic():
            draft.save(force_insert=True)
            draft_history_record(draft=draft, now=now)
    except IntegrityError:
        return None
    return draft


def draft_failure_set(draft: DraftFailure, *, now: datetime, actor: str = "", **fields) -> None:
    """Save ``fields`` on ``draft`` and append the transition to its history (atomic)."""
    for name, value in fields.items():
        setattr(draft, name, value)
    draft.reason = draft.reason[:REASON_MAX]
    draft.updated_at = now
    with transaction.atomic():
        draft.save()
        draft_history_record(draft=draft, now=now, actor=actor)
