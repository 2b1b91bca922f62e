import pytest

from tests.memory.retrieval.embedders import FailingEmbedder, KeywordEmbedder


@pytest.fixture
def keyword_embedder():
    return KeywordEmbedder(["deploy", "friday", "database", "lunch", "python"])


@pytest.fixture
def failing_embedder():
    return FailingEmbedder()
