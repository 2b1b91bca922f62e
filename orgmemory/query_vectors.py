"""Extension point: a transform of the query vector the org-fact dense leg ranks with.

Org memory embeds a query with the company's embedder; the app that owns per-company query
adapters (``memory.finetune``) registers a transform in ``AppConfig.ready``
that maps the vector through the company's active adapter, the way the memory search does,
so facts and memories are ranked with the same query vector. Without a registration (or
when the transform declines) the base vector ranks. A transform receives the company's parsed
config (the caller's, when it has one: a context request reads it once), so it reads none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from persistence.selectors.config import company_config

if TYPE_CHECKING:
    import numpy as np

    from persistence.models import Company
    from synthorg.company_config import CompanyConfig

#: ``(company, embedder_id, vector, config) -> vector`` (the same vector when nothing
#: applies; ``config``: the company's parsed config)
QueryVectorTransform = Callable[["Company", str, "np.ndarray", "CompanyConfig"], "np.ndarray"]
_transforms: list[QueryVectorTransform] = []


def register_query_vector_transform(transform: QueryVectorTransform) -> None:
    if transform not in _transforms:
        _transforms.append(transform)


def transform_query_vector(
    company: Company,
    embedder_id: str,
    vector: np.ndarray,
    *,
    config: CompanyConfig | None = None,
) -> np.ndarray:
    """``vector`` through every registered transform (``config``: the company's, when the
    caller has read it; read here only when a transform is registered)."""
    if _transforms and config is None:
        config = company_config(company)
    for transform in _transforms:
        vector = transform(company, embedder_id, vector, config)
    return vector
