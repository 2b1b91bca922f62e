"""Memory fixtures: companies whose embedder is an OpenAI-compatible test server.

Most memory tests use the default local model (loaded once per process). A company can
instead point at a :class:`FakeOpenAIServer` — healthy (to count embedder calls) or
failing (degraded mode: memories stored with a pending embedding).
"""

import pytest

from persistence.services.companies import company_config_set
from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, error_payload

EMBEDDING_DIMS = 384


def use_remote_embedder(company, server: FakeOpenAIServer, *, model: str = "fake-embed") -> None:
    company_config_set(
        company=company,
        data={
            "memory": {
                "embedder": {"model": model, "dims": EMBEDDING_DIMS, "base_url": server.base_url}
            }
        },
    )


@pytest.fixture
def embedding_server():
    """A healthy OpenAI-compatible embeddings server (384-dim deterministic vectors)."""
    with FakeOpenAIServer(embedding_dims=EMBEDDING_DIMS) as server:
        yield server


@pytest.fixture
def remote_embedder(company, embedding_server):
    """``company`` embeds through ``embedding_server``; yields the server."""
    use_remote_embedder(company, embedding_server)
    return embedding_server


@pytest.fixture
def failing_embedder(company, embedding_server):
    """``company``'s embedder answers every request with a non-retryable 401."""
    embedding_server.set_handler(
        embedding_server.EMBEDDINGS,
        lambda request: ScriptedResponse(status=401, json=error_payload("bad key")),
    )
    use_remote_embedder(company, embedding_server)
    return embedding_server


@pytest.fixture(autouse=True)
def _fresh_remote_embedders():
    """Remote embedders are cached per config (with their circuit breaker); a port reused
    by a later test's server must not inherit an earlier test's open breaker."""
    from persistence.selectors.embedder import cached_remote_embedder

    cached_remote_embedder.cache_clear()
    yield
    cached_remote_embedder.cache_clear()
