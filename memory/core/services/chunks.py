"""Embedding a memory as windows and writing its chunk rows (see :mod:`memory.core.chunking`).

Every path that writes ``Memory.embedding`` (store, edit, backfill, re-embedding, import,
restore) computes the memory's windows with :func:`windows_for` and writes window 0 to the
row and the others with :func:`chunks_replace`, in the transaction that writes the row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

import numpy as np
from django.db import connection
from pgvector.psycopg import register_vector

from memory.core.chunking import memory_windows
from memory.core.models.memory import Memory, MemoryChunk
from persistence.models import Company
from persistence.selectors.config import company_config
from synthorg.company_config.memory import MemoryChunkingConfig


def chunking_for(company: Company) -> MemoryChunkingConfig:
    return company_config(company).memory.chunking


def windows_for(content: str, context: str, chunking: MemoryChunkingConfig) -> list[str]:
    """The texts embedded for one memory, first window first."""
    return memory_windows(
        content, context, max_windows=chunking.max_chunks, context_chars=chunking.context_chars
    )


def flat_texts(windows: Iterable[Sequence[str]]) -> list[str]:
    """Every window of every memory once, in first-seen order (one embedder call)."""
    return list(dict.fromkeys(text for group in windows for text in group))


def chunks_replace(
    company_id: int,
    vectors: Sequence[tuple[UUID, Sequence[np.ndarray] | None]],
    embedder_id: str,
) -> None:
    """Make each memory's chunk rows exactly its windows after the first (``None``: no
    vectors, the memory is pending: no chunks) and set ``chunk_count``. Runs in the caller's
    transaction; the caller writes window 0 to ``Memory.embedding``."""
    if not vectors:
        return
    ids = [memory_id for memory_id, _ in vectors]
    MemoryChunk.objects.filter(memory_id__in=ids).delete()
    rows = [
        (memory_id, ordinal, vector)
        for memory_id, windows in vectors
        if windows
        for ordinal, vector in enumerate(windows[1:], start=1)
    ]
    chunks_insert(company_id, rows, embedder_id)
    counts: dict[int, list] = {}
    for memory_id, windows in vectors:
        counts.setdefault(max(len(windows or ()) - 1, 0), []).append(memory_id)
    for count, members in counts.items():
        Memory.objects.filter(pk__in=members).exclude(chunk_count=count).update(chunk_count=count)


def chunks_insert(
    company_id: int, rows: Sequence[tuple[UUID, int, np.ndarray]], embedder_id: str
) -> None:
    """Write chunk rows ``(memory_id, ordinal, vector)`` with one binary ``COPY`` (vectors as
    binary float4s, like the memory rows of a store)."""
    if not rows:
        return
    connection.ensure_connection()
    raw = connection.connection
    if raw.adapters.types.get("vector") is None:
        register_vector(raw)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            "COPY memory_memorychunk (company_id, memory_id, ordinal, embedding, embedder_id) "
            "FROM STDIN WITH (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types(["int8", "uuid", "int2", "vector", "varchar"])
        for memory_id, ordinal, vector in rows:
            copy.write_row(
                [company_id, memory_id, ordinal, np.asarray(vector, dtype=np.float32), embedder_id]
            )
