"""Backfill of missing or stale fact vectors.

A vector is missing when the embedder was unavailable as the fact was written, and stale
when it was made by another model than the current default embedder (the default model
changed: its vectors carry another ``embedder_id`` and are never compared with the
query's). Only PUBLISH rows that are some fact's live version are embedded: past versions
are still found by BM25 for time travel, and live ones are what agents query every day.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, Q

from orgmemory.embedding import org_embedder
from orgmemory.models import FactVersionEmbedding, OperationLogEntry
from synthorg.embedding import EmbeddingError

BACKFILL_BATCH = 64


def fact_embeddings_backfill(*, batch_size: int = BACKFILL_BATCH) -> int:
    """Embed up to ``batch_size`` live fact versions that have no vector of the current
    embedder; returns how many.

    Returns 0 without doing anything when no embedder is usable; an embedder failure
    leaves the rows for the next run.
    """
    embedder = org_embedder()
    if embedder is None:
        return 0
    missing = list(
        OperationLogEntry.objects.filter(
            operation_type=OperationLogEntry.Operation.PUBLISH,
            fact__retracted_at__isnull=True,
            version=F("fact__version"),
        )
        .filter(Q(embedding__isnull=True) | ~Q(embedding__embedder_id=embedder.embedder_id))
        .order_by("timestamp", "operation_id")[:batch_size]
    )
    if not missing:
        return 0
    try:
        vectors = embedder.embed([entry.content for entry in missing])
    except EmbeddingError:
        return 0
    with transaction.atomic():
        FactVersionEmbedding.objects.bulk_create(
            [
                FactVersionEmbedding(
                    operation=entry, embedder_id=embedder.embedder_id, embedding=vector
                )
                for entry, vector in zip(missing, vectors, strict=True)
            ],
            update_conflicts=True,
            unique_fields=["operation"],
            update_fields=["embedder_id", "embedding"],
        )
    return len(missing)
