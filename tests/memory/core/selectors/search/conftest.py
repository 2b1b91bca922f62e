import pytest

# The retrieval tests' embedders (a keyword embedder over a fixed vocabulary, a failing one).
# The keyword embedder's HNSW index (session-scoped, autouse) too.
from tests.memory.core.retrieval.conftest import (  # noqa: F401
    _keyword_embedder_index,
    failing_embedder,
    keyword_embedder,
)
from tests.memory.core.selectors.search.helpers import RRF
from tests.persistence.factories import AgentFactory, CompanyFactory


@pytest.fixture
def rrf_agent():
    return AgentFactory(company=CompanyFactory(config=RRF))
