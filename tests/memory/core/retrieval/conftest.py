import pytest

from tests.memory.core.retrieval.embedders import FailingEmbedder, KeywordEmbedder


@pytest.fixture
def keyword_embedder():
    return KeywordEmbedder(["deploy", "friday", "database", "lunch", "python"])


@pytest.fixture
def failing_embedder():
    return FailingEmbedder()


@pytest.fixture(scope="session", autouse=True)
def _keyword_embedder_index(django_db_setup, django_db_blocker):
    """The test embedder gets its HNSW index the way a new embedder does in production
    (``ensure_vector_index``, concurrently, as the owner), once per test database."""
    from memory.core.vector_indexes import ensure_vector_index

    with django_db_blocker.unblock():
        ensure_vector_index(KeywordEmbedder.embedder_id, KeywordEmbedder.dims)
