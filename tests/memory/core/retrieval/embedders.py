"""Deterministic embedders for search tests (real implementations of the Embedder protocol).

``KeywordEmbedder`` maps each text to a unit vector over a few named axes (one per keyword
it contains), so cosine similarities in a test are known exactly; ``FailingEmbedder`` always
raises, as an unreachable embedding service would.
"""

from collections.abc import Sequence

import numpy as np

from synthorg.embedding import EmbeddingError

DIMS = 384


class KeywordEmbedder:
    embedder_id = "test-keywords"
    dims = DIMS

    def __init__(self, keywords: Sequence[str]) -> None:
        self.keywords = list(keywords)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            for axis, keyword in enumerate(self.keywords):
                out[row, axis] = lowered.count(keyword)
            if not out[row].any():
                out[row, DIMS - 1] = 1.0
            out[row] /= np.linalg.norm(out[row])
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class FailingEmbedder:
    embedder_id = "test-failing"
    dims = DIMS

    def embed(self, texts):
        raise EmbeddingError("embedding service unreachable")

    def embed_one(self, text):
        raise EmbeddingError("embedding service unreachable")
