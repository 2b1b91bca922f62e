"""Dense vectors for org facts, from the company's embedder when it is available.

Org facts are embedded with the same embedder as the company's memories
(:func:`persistence.selectors.embedder.company_embedder`: the local all-MiniLM-L6-v2 model,
or the company's OpenAI-compatible override of any width), so one query vector serves both
and an embedder change re-embeds both (the core's re-embedding job). If the embedder cannot load or
fails, or ``settings.ORGMEMORY_EMBEDDINGS`` is ``False`` (tests that do not need it), facts
are stored without a vector and retrieval uses BM25 alone: the dense leg is an improvement,
never a requirement.

A fact longer than the embedder's window is embedded as overlapping windows (at most the
company's ``memory.chunking.max_chunks``, as for memories): :func:`fact_window_vectors`.
"""

from __future__ import annotations

import logging

import numpy as np
from django.conf import settings

from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.selectors.embedder import company_embedder
from synthorg.company_config import CompanyConfig
from synthorg.embedding import Embedder, EmbeddingError, embed_query
from synthorg.errors import DomainError
from synthorg.retrieval.windows import text_windows

logger = logging.getLogger(__name__)


def org_embedder(company: Company, config: CompanyConfig | None = None) -> Embedder | None:
    """The embedder for ``company``'s org facts, or ``None`` when embeddings are off or the
    company's embedder is unusable (``config``: the company's, when already read)."""
    if not getattr(settings, "ORGMEMORY_EMBEDDINGS", True):
        return None
    try:
        return company_embedder(company, config)
    except DomainError as exc:
        logger.warning("org-memory embedder unusable for company %s: %s", company.pk, exc)
        return None


def embed_query_text(
    text: str, *, company: Company, config: CompanyConfig | None = None
) -> tuple[str, np.ndarray] | None:
    """``(embedder_id, vector)`` for a query, or ``None`` if no embedder is usable. Through
    the process-wide query cache, which the memory search shares: a context request that
    ranks org facts and memories with the same model embeds its query once. (Fact versions
    are embedded by :func:`embed_fact`.)"""
    embedder = org_embedder(company, config)
    if embedder is None:
        return None
    try:
        return embedder.embedder_id, embed_query(embedder, text)
    except EmbeddingError as exc:
        logger.warning("org-memory embedding unavailable, using BM25 only: %s", exc)
        return None


def fact_windows(company: Company, content: str) -> list[str]:
    """The texts embedded for a fact version's ``content``, first window first."""
    return text_windows(content, company_config(company).memory.chunking.max_chunks)


def fact_window_vectors(
    embedder: Embedder, company: Company, contents: list[str]
) -> list[list[np.ndarray]]:
    """Each content's window vectors (first window first), in one embedder call; raises
    :class:`~synthorg.embedding.EmbeddingError` as the embedder does."""
    windows = [fact_windows(company, content) for content in contents]
    flat = [text for group in windows for text in group]
    vectors = embedder.embed(flat) if flat else []
    out: list[list[np.ndarray]] = []
    start = 0
    for group in windows:
        out.append([vectors[i] for i in range(start, start + len(group))])
        start += len(group)
    return out


def embed_fact(content: str, *, company: Company) -> tuple[str, list[np.ndarray]] | None:
    """``(embedder_id, window vectors)`` for a fact version's ``content``, or ``None`` if no
    embedder is usable (BM25 alone ranks it until the backfill embeds it)."""
    embedder = org_embedder(company)
    if embedder is None:
        return None
    try:
        return embedder.embedder_id, fact_window_vectors(embedder, company, [content])[0]
    except EmbeddingError as exc:
        logger.warning("org-memory embedding unavailable, using BM25 only: %s", exc)
        return None
