"""Per-company concurrency limit for LLM work: PostgreSQL advisory locks as slots.

The LLM base URL is server-wide but each company names its own model, so one company's
model can hang while the others answer. The LLM cluster has few workers (``Q_LLM_WORKERS``,
default 2); without a limit one company's hanging tasks hold all of them and every other
company's captures and extractions wait behind it.

A company gets at most ``SYNTHORG_LLM_COMPANY_CONCURRENCY`` (default 1) LLM tasks running at
once. A slot is the session-level advisory lock ``pg_try_advisory_lock(key)`` with ``key``
built from a namespace, the slot number and the company id (:func:`slot_key`). A task that
finds every slot of its company taken does not wait: :func:`company_llm_slot` yields
``False`` and the caller defers its work (re-queues it for later) so the worker is free at
once.

Why session-level locks: the lock lives exactly as long as the worker's database
connection, so a worker killed by the q2 timeout (or a crash) frees its slot with its
connection, and no transaction is held open across the LLM call. Advisory locks are
re-entrant within one session, so a task holding its company's slot may call a service
that takes it again (the capture retry runs captures that each take the slot).
Needs a session-pinned connection (no PgBouncer transaction pooling in front of workers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from synthorg.errors import ServiceUnavailableError

#: High 16 bits of every slot key, so these locks cannot collide with other advisory locks.
NAMESPACE = 0x4C4C  # "LL"
_COMPANY_BITS = 40
_SLOT_BITS = 8
DEFAULT_CONCURRENCY = 1
#: Seconds a caller refused for busy slots is told to wait (``Retry-After``).
BUSY_RETRY_AFTER = 15
SLOTS_BUSY = (
    "Every LLM slot of the company is busy (SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}): "
    "nothing was run; try again in {retry_after} s."
)


class LLMSlotsBusyError(ServiceUnavailableError):
    """Work asked for inside a request found every LLM slot of its company taken: nothing
    ran (503 ``llm_slots_busy`` with ``Retry-After``)."""

    code = "llm_slots_busy"

    def __init__(self, *, retry_after: int = BUSY_RETRY_AFTER) -> None:
        self.retry_after = retry_after
        super().__init__(
            SLOTS_BUSY.format(limit=company_llm_concurrency(), retry_after=retry_after),
            extra={"retry_after": retry_after},
        )


def company_llm_concurrency() -> int:
    """``SYNTHORG_LLM_COMPANY_CONCURRENCY``: LLM tasks one company may run at once (≥ 1)."""
    return int(getattr(settings, "SYNTHORG_LLM_COMPANY_CONCURRENCY", DEFAULT_CONCURRENCY))


def slot_key(company_id: int, slot: int) -> int:
    """The advisory-lock key (a signed bigint) of one slot of one company."""
    if not 0 <= slot < 2**_SLOT_BITS:
        raise ValueError(f"slot {slot} out of range")
    company = int(company_id) & (2**_COMPANY_BITS - 1)
    return (NAMESPACE << (_COMPANY_BITS + _SLOT_BITS)) | (slot << _COMPANY_BITS) | company


@contextmanager
def company_llm_slot(company_id: int) -> Iterator[bool]:
    """Take one free LLM slot of ``company_id`` without waiting; yields whether one was
    taken (``False``: every slot is busy — defer, do not call the LLM). The slot is
    released on exit."""
    held: int | None = None
    with connection.cursor() as cursor:
        for slot in range(company_llm_concurrency()):
            key = slot_key(company_id, slot)
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            if cursor.fetchone()[0]:
                held = key
                break
    try:
        yield held is not None
    finally:
        if held is not None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [held])
