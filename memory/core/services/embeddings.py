"""Computing memory embeddings, and backfilling the ones a failing embedder left pending.

A store never fails because the embedder does: the memory is written with
``embedding_status="pending"`` and :func:`memory_embeddings_backfill` (a q2 schedule) fills
the vector in later. Search answers from the sparse leg meanwhile.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict
from uuid import UUID

import numpy as np
from django.db import transaction

from memory.core.models.memory import EMBEDDING_DIMS, Memory
from memory.core.services.chunks import chunking_for, chunks_replace, flat_texts, windows_for
from persistence.models import Company
from persistence.selectors.embedder import company_embedder
from synthorg.embedding import Embedder, EmbeddingError
from synthorg.errors import DomainError

logger = logging.getLogger(__name__)

BACKFILL_BATCH = 500


class _PendingRow(TypedDict):
    """The fields of a pending memory the backfill reads (and re-checks when it writes)."""

    id: UUID
    company_id: int
    content: str
    context: str


@dataclass(frozen=True)
class Embedded:
    """Vectors for a list of texts, or ``None`` when the embedder failed (degraded)."""

    vectors: np.ndarray | None
    embedder_id: str

    @property
    def ok(self) -> bool:
        return self.vectors is not None

    @property
    def status(self) -> str:
        return Memory.EmbeddingStatus.READY if self.ok else Memory.EmbeddingStatus.PENDING

    def vector(self, index: int) -> list[float] | None:
        return None if self.vectors is None else self.vectors[index].tolist()


def embed_texts(
    *, company: Company, texts: Sequence[str], embedder: Embedder | None = None
) -> Embedded:
    """Embed ``texts`` in one call to the company's embedder; failures degrade, never raise."""
    if not texts:
        return Embedded(vectors=np.zeros((0, EMBEDDING_DIMS), dtype=np.float32), embedder_id="")
    dims = EMBEDDING_DIMS
    try:
        embedder = embedder or company_embedder(company)
        vectors = embedder.embed(list(texts))
        embedder_id, dims = embedder.embedder_id, embedder.dims
    except (EmbeddingError, DomainError) as exc:
        logger.warning("embedding failed for company %s: %s", company.pk, exc)
        return Embedded(vectors=None, embedder_id="")
    if vectors.shape != (len(texts), dims):
        logger.warning(
            "embedder %s returned shape %s for %d texts", embedder_id, vectors.shape, len(texts)
        )
        return Embedded(vectors=None, embedder_id="")
    return Embedded(vectors=vectors, embedder_id=embedder_id)


def memory_embeddings_backfill(*, limit: int = BACKFILL_BATCH) -> int:
    """Embed up to ``limit`` pending memories (oldest first); returns how many were filled.

    The embedder runs outside any transaction; each row is then updated only if its text did
    not change meanwhile (a concurrent PATCH re-embeds it itself).
    """
    pending = list(
        Memory.objects.filter(embedding_status=Memory.EmbeddingStatus.PENDING)
        .order_by("updated_at", "id")
        .values("id", "company_id", "content", "context")[:limit]
    )
    by_company: dict[int, list[_PendingRow]] = defaultdict(list)
    for row in pending:
        by_company[row["company_id"]].append(row)
    filled = 0
    for company_id, rows in by_company.items():
        company = Company.objects.get(pk=company_id)
        chunking = chunking_for(company)
        windows = [windows_for(r["content"], r["context"], chunking) for r in rows]
        texts = flat_texts(windows)
        embedded = embed_texts(company=company, texts=texts)
        if embedded.vectors is None:
            continue
        by_text = dict(zip(texts, embedded.vectors, strict=True))
        with transaction.atomic():
            done = []
            for row, row_windows in zip(rows, windows, strict=True):
                vectors = [by_text[text] for text in row_windows]
                if Memory.objects.filter(
                    pk=row["id"],
                    embedding_status=Memory.EmbeddingStatus.PENDING,
                    content=row["content"],
                    context=row["context"],
                ).update(
                    embedding=vectors[0].tolist(),
                    embedder_id=embedded.embedder_id,
                    embedding_status=Memory.EmbeddingStatus.READY,
                ):
                    done.append((row["id"], vectors))
            chunks_replace(company_id, done, embedded.embedder_id)
            filled += len(done)
    return filled
