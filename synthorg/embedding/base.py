"""The embedder contract shared by every embedding backend.

Pure module: no Django imports, so retrieval code and workers can use it anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(Exception):
    """Any failure to produce embeddings: missing or corrupt model, HTTP failure, bad response.

    The message says what failed and where, so it can be logged or surfaced as-is; it never
    contains credentials.
    """


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size, L2-normalised float32 vectors.

    Contract for implementations:

    * ``embedder_id`` names the model (and backend) that produced a vector; it is stored with
      every vector so vectors from different models are never compared. Reading it must not
      load a model or make a network call.
    * ``dims`` is the length of every vector; reading it is cheap too.
    * ``embed(texts)`` returns a ``float32`` array of shape ``(len(texts), dims)`` whose rows
      are in input order and have unit L2 norm (an all-zero model output stays zero). An empty
      sequence gives shape ``(0, dims)`` without loading or calling anything.
    * Any failure raises :class:`EmbeddingError`; passing a bare ``str`` instead of a sequence
      of strings, or a non-string item, raises :class:`TypeError`.
    * Implementations are safe to call from several threads at once.
    """

    @property
    def embedder_id(self) -> str: ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_one(self, text: str) -> np.ndarray: ...


def validate_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, raising :class:`TypeError` on a bare string or non-str item.

    A bare ``str`` is a sequence of characters, so without this check ``embed("hello")`` would
    silently embed five one-letter texts.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed() takes a sequence of strings, not a single string")
    items = list(texts)
    for position, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"text at position {position} is {type(item).__name__}, not str")
    return items


def l2_normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with each row scaled to unit L2 norm; zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
