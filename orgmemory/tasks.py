"""django-q2 tasks: thin interfaces that call services."""

from orgmemory.services.embeddings import fact_embeddings_backfill


def backfill_fact_embeddings() -> int:
    return fact_embeddings_backfill()
