import pytest

from memory.domain import MemoryStoreRequest
from memory.retrieval.query import MemoryQuery
from memory.selectors.search import memory_search
from memory.services.store import memory_store_batch
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_smoke(keyword_embedder):
    agent = AgentFactory()
    memory_store_batch(
        agent=agent,
        requests=[
            MemoryStoreRequest(content=t, category="semantic")
            for t in ["The deploy runs on friday", "Lunch is at noon", "The database is postgres"]
        ],
        embedder=keyword_embedder,
    )
    result = memory_search(
        agent=agent, query=MemoryQuery(text="when is the deploy?"), embedder=keyword_embedder
    )
    for h in result.hits:
        print(h.memory.content, h.relevance, h.combined, h.dense_score, h.sparse_score)
    assert result.hits[0].memory.content == "The deploy runs on friday"
