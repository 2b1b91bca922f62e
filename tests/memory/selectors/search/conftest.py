import pytest

# The retrieval tests' embedders (a keyword embedder over a fixed vocabulary, a failing one).
from tests.memory.retrieval.conftest import failing_embedder, keyword_embedder  # noqa: F401
from tests.memory.selectors.search.helpers import RRF
from tests.persistence.factories import AgentFactory, CompanyFactory


@pytest.fixture
def rrf_agent():
    return AgentFactory(company=CompanyFactory(config=RRF))
