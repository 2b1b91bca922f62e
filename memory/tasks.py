"""django-q2 tasks: thin interfaces that call services."""

from memory.services.embeddings import BACKFILL_BATCH, memory_embeddings_backfill


def backfill_pending_embeddings(limit: int = BACKFILL_BATCH) -> int:
    return memory_embeddings_backfill(limit=limit)
