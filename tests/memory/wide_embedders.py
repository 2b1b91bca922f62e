"""An OpenAI-compatible test server whose vectors carry meaning, at any width.

``words_handler(dims)`` answers ``POST /v1/embeddings`` with bag-of-words vectors: each
lower-cased word adds 1 on the axis its sha256 picks, so texts sharing words are close and
texts sharing none are orthogonal (as far as hashing allows). Ranking in a test is then
predictable without a model.
"""

from __future__ import annotations

import hashlib
import re

from persistence.services.companies import company_config_set
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, embeddings_payload

_WORD = re.compile(r"[a-z0-9]+")
#: Words too common to carry meaning here (kept off the axes, like stop words).
STOP = {"the", "a", "an", "is", "are", "at", "of", "to", "in", "on", "does", "when", "what"}


def words_vector(text: str, dims: int) -> list[float]:
    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        if word in STOP:
            continue
        axis = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % dims
        vector[axis] += 1.0
    if not any(vector):
        vector[0] = 1.0
    return vector


def words_handler(dims: int, window: int | None = None):
    """``window``: read only the first ``window`` characters of each input, as a real model
    reads only its first N tokens (the rest of a long text is invisible to it)."""

    def handle(request) -> ScriptedResponse:
        body = request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [words_vector(t[:window] if window else t, dims) for t in inputs]
        return ScriptedResponse(json=embeddings_payload(vectors, model=body["model"]))

    return handle


def words_server(dims: int, window: int | None = None) -> FakeOpenAIServer:
    server = FakeOpenAIServer(embedding_dims=dims)
    server.set_handler(server.EMBEDDINGS, words_handler(dims, window))
    return server


def use_wide_embedder(company, server: FakeOpenAIServer, *, model: str = "wide-embed") -> None:
    company_config_set(
        company=company,
        data={
            "memory": {
                "embedder": {
                    "model": model,
                    "dims": server.embedding_dims,
                    "base_url": server.base_url,
                }
            }
        },
    )
