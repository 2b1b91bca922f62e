"""Backfill of missing or stale fact vectors.

A vector is missing when the embedder was unavailable as the fact was written, and stale
when it was made by another embedder (or width) than the company's current one: its vectors
are never compared with the query's. Only PUBLISH rows that are some fact's live version
are embedded: past versions are still found by BM25 for time travel, and live ones are what
agents query every day. A company's embedder change is also handled, with progress, by the
re-embedding job (``memory.core.services.reembed``), which uses :func:`fact_vectors_store` too.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.expressions import RawSQL

from orgmemory.embedding import fact_window_vectors, org_embedder
from orgmemory.models import FactVersionChunk, FactVersionEmbedding, OperationLogEntry
from persistence.models import Company
from synthorg.embedding import EmbeddingError

BACKFILL_BATCH = 64


def live_fact_versions(company: Company) -> QuerySet:
    """The company's live fact versions (what carries a vector)."""
    return OperationLogEntry.objects.filter(
        company=company,
        operation_type=OperationLogEntry.Operation.PUBLISH,
        fact__retracted_at__isnull=True,
        version=F("fact__version"),
    )


def stale_fact_versions(company: Company, embedder_id: str, dims: int) -> QuerySet:
    """Live fact versions without a vector of ``(embedder_id, dims)``."""
    current = (
        FactVersionEmbedding.objects.filter(embedder_id=embedder_id)
        .annotate(width=RawSQL("vector_dims(embedding)", []))
        .filter(width=dims)
    )
    return live_fact_versions(company).filter(~Q(operation_id__in=current.values("operation_id")))


@transaction.atomic
def fact_vectors_store(
    *, entries: Sequence[OperationLogEntry], embedder_id: str, vectors, replace: bool = True
) -> int:
    """Insert or replace the vectors of ``entries`` (``vectors[i]``: entry ``i``'s window
    vectors, first window first, :func:`orgmemory.embedding.fact_window_vectors`): the first
    window's in :class:`FactVersionEmbedding`, each later one's as a
    :class:`FactVersionChunk`, the entry's earlier chunks replaced (``replace=False``: a new
    version, which has none). Returns how many entries were written."""
    FactVersionEmbedding.objects.bulk_create(
        [
            FactVersionEmbedding(
                operation=entry,
                embedder_id=embedder_id,
                embedding=windows[0],
                chunk_count=len(windows) - 1,
            )
            for entry, windows in zip(entries, vectors, strict=True)
        ],
        update_conflicts=True,
        unique_fields=["operation"],
        update_fields=["embedder_id", "embedding", "chunk_count"],
    )
    if replace:
        FactVersionChunk.objects.filter(operation__in=[entry.pk for entry in entries]).delete()
    FactVersionChunk.objects.bulk_create(
        FactVersionChunk(
            operation=entry, ordinal=ordinal, embedder_id=embedder_id, embedding=vector
        )
        for entry, windows in zip(entries, vectors, strict=True)
        for ordinal, vector in enumerate(windows[1:], start=1)
    )
    return len(entries)


def fact_embeddings_backfill(*, batch_size: int = BACKFILL_BATCH) -> int:
    """Embed up to ``batch_size`` live fact versions that have no vector of their company's
    current embedder; returns how many.

    Companies whose embedder is switched off or unusable are skipped; an embedder failure
    leaves the rows for the next run.
    """
    done = 0
    companies = Company.objects.filter(
        pk__in=OperationLogEntry.objects.filter(
            operation_type=OperationLogEntry.Operation.PUBLISH
        ).values("company_id")
    ).order_by("pk")
    for company in companies:
        if done >= batch_size:
            break
        embedder = org_embedder(company)
        if embedder is None:
            continue
        missing = list(
            stale_fact_versions(company, embedder.embedder_id, embedder.dims).order_by(
                "timestamp", "operation_id"
            )[: batch_size - done]
        )
        if not missing:
            continue
        try:
            vectors = fact_window_vectors(embedder, company, [entry.content for entry in missing])
        except EmbeddingError:
            continue
        done += fact_vectors_store(
            entries=missing, embedder_id=embedder.embedder_id, vectors=vectors
        )
    return done
