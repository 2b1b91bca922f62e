"""Storing and searching helpers shared by the search tests."""

from datetime import UTC, datetime

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from memory.core.services.store import memory_store_batch

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
LINEAR = {"memory": {"retrieval": {"fusion_strategy": "linear"}}}
# rrf_k 60 (not the product's 10): the hand-computed fusion scores use it
RRF = {"memory": {"retrieval": {"fusion_strategy": "rrf", "rrf_k": 60}}}


def store(agent, embedder, *contents, shared=False, **fields):
    results = memory_store_batch(
        agent=agent,
        requests=[
            MemoryStoreRequest(
                content=c,
                category=fields.get("category", "semantic"),
                **{k: v for k, v in fields.items() if k != "category"},
            )
            for c in contents
        ],
        embedder=embedder,
        now=NOW,
        shared=shared,
        deduplicate=False,
    )
    return [Memory.objects.get(pk=r.id) for r in results]


def search(agent, embedder, text=None, legs=("dense", "sparse"), **fields):
    return memory_search(
        agent=agent, query=MemoryQuery(text=text, **fields), embedder=embedder, now=NOW, legs=legs
    )


def contents(result):
    return [hit.memory.content for hit in result.hits]
