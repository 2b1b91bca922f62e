"""Which embedder a company's memories use: see :mod:`persistence.selectors.embedder`.

Re-exported here under the names the memory app has always used.
"""

from __future__ import annotations

from persistence.selectors.embedder import (
    SECRET_NOT_ALLOWED,
    cached_remote_embedder,
    company_embedder,
    company_embedder_key,
)

embedder_for = company_embedder
_remote_embedder = cached_remote_embedder  # tests clear its cache

__all__ = [
    "SECRET_NOT_ALLOWED",
    "company_embedder_key",
    "embedder_for",
]
