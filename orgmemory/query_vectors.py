"""Extension point: a transform of the query vector the org-fact dense leg ranks with.

Org memory embeds a query with the company's embedder; the app that owns per-company query
adapters (``memory.finetune``) registers a transform in ``AppConfig.ready``
that maps the vector through the company's active adapter, the way the memory search does,
so facts and memories are ranked with the same query vector. Without a registration (or
when the transform declines) the base vector ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from persistence.models import Company

#: ``(company, embedder_id, vector) -> vector`` (the same vector when nothing applies)
QueryVectorTransform = Callable[["Company", str, "np.ndarray"], "np.ndarray"]
_transforms: list[QueryVectorTransform] = []


def register_query_vector_transform(transform: QueryVectorTransform) -> None:
    if transform not in _transforms:
        _transforms.append(transform)


def transform_query_vector(company: Company, embedder_id: str, vector: np.ndarray) -> np.ndarray:
    for transform in _transforms:
        vector = transform(company, embedder_id, vector)
    return vector
