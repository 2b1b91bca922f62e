"""Another worker holding a company's LLM slot (:mod:`synthorg.llm.slots`), for tests.

Each helper runs in its own thread with its own database connection, as another LLM worker
or request would: advisory locks are per session, so the test's own connection could
re-enter a lock it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from synthorg.llm.slots import company_llm_slot


@contextmanager
def slot_held_elsewhere(company_id: int) -> Iterator[None]:
    """Another worker holds one of ``company_id``'s LLM slots for the block."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with company_llm_slot(company_id) as slot:
                assert slot
                held.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=60)
    try:
        yield
    finally:
        release.set()
        holder.join(timeout=60)


def slot_taken_elsewhere(company_id: int) -> bool:
    """Whether the company's LLM slots are all held by some other connection right now."""
    taken: list[bool] = []

    def probe() -> None:
        try:
            with company_llm_slot(company_id) as slot:
                taken.append(not slot)
        finally:
            connection.close()

    prober = threading.Thread(target=probe)
    prober.start()
    prober.join(timeout=60)
    return taken[0]
