"""Embedders of other widths work end to end: store, search, context and org facts, with
each (embedder, width) walked through its own partial HNSW index (EXPLAIN)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction

from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from memory.core.vector_indexes import (
    dense_condition,
    dense_distance,
    ensure_vector_index,
    index_name,
    vector_index_state,
)
from orgmemory.domain import OrgMemoryQuery
from orgmemory.models import FactVersionEmbedding
from orgmemory.selectors import query_facts
from orgmemory.services.facts import fact_publish
from persistence.principal import Principal
from synthorg.embedding import MINILM_EMBEDDER_ID
from synthorg.retrieval.vectors import vector_literal
from tests.memory.wide_embedders import use_wide_embedder, words_server, words_vector
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

WIDTHS = [768, 1536, 3072]


def store(caller, content, **fields):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": "semantic", **fields}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def vector_widths(company) -> list[tuple[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT embedder_id, vector_dims(embedding) FROM memory_memory "
            "WHERE company_id = %s AND embedding IS NOT NULL",
            [company.pk],
        )
        return cursor.fetchall()


@pytest.fixture(params=WIDTHS)
def wide(request, company):
    with words_server(request.param) as server:
        use_wide_embedder(company, server)
        yield server


def test_store_search_and_context_with_a_wider_embedder(caller, company, wide):
    dims = wide.embedding_dims
    billing = store(caller, "The billing service deploys every Friday at noon.")
    store(caller, "Ana prefers green tea over coffee in the morning.")
    store(caller, "Grafana dashboards live on port 3000.")
    assert billing["embedding_status"] == "ready"
    assert vector_widths(company) == [("openai:wide-embed", dims)]

    response = caller.client.post(
        "/api/v1/memories/search",
        {"query": "billing deploys friday", "include_shared": False},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["degraded"] == []
    top = body["results"][0]
    assert top["memory"]["id"] == billing["id"]
    assert (top["dense_rank"], top["sparse_rank"]) == (1, 1)
    # cosine of the stored vector with the query's, as the test server built them
    stored = np.array(words_vector("The billing service deploys every Friday at noon.", dims))
    query = np.array(words_vector("billing deploys friday", dims))
    cosine = stored @ query / np.linalg.norm(stored) / np.linalg.norm(query)
    assert top["relevance"] == pytest.approx(cosine, abs=1e-3 if dims > 2000 else 1e-5)

    # dense only: the order is the cosine order (tea/grafana share no word with the query)
    dense = memory_search(
        agent=caller.agent, query=MemoryQuery(text="morning tea"), include_shared=False,
        legs=("dense",),
    )  # fmt: skip
    assert dense.hits[0].memory.content.startswith("Ana prefers green tea")
    assert dense.degraded == []

    response = caller.client.post(
        "/api/v1/memories/context",
        {"query": "when does billing deploy", "token_budget": 500},
        format="json",
    )
    assert response.status_code == 200, response.json()
    context = response.json()
    assert context["degraded"] == []
    assert context["included"][0]["id"] == billing["id"]


def test_vectors_of_another_width_or_embedder_are_never_compared(caller, company, wide):
    """Rows of the default model (384) in the same agent's store are skipped by the wide
    query, not compared (comparing vectors of different widths is an error in pgvector)."""
    mine = store(caller, "Billing deploys on Friday.")
    old = Memory.objects.create(
        company=company, agent=caller.agent, category="semantic",
        content="Billing deploys on Friday (old model).", embedding=[0.1] * 384,
        embedder_id=MINILM_EMBEDDER_ID, embedding_status="ready",
        created_at=Memory.objects.get(pk=mine["id"]).created_at,
        updated_at=Memory.objects.get(pk=mine["id"]).updated_at, level="persistent",
    )  # fmt: skip
    result = memory_search(
        agent=caller.agent, query=MemoryQuery(text="billing friday"), include_shared=False
    )
    by_id = {str(hit.memory.pk): hit for hit in result.hits}
    assert by_id[mine["id"]].dense_rank == 1
    assert by_id[str(old.pk)].dense_rank is None  # found by BM25 only
    assert by_id[str(old.pk)].sparse_rank is not None


def test_org_facts_use_the_company_embedder_of_any_width(company, wide, settings):
    settings.ORGMEMORY_EMBEDDINGS = True
    dims = wide.embedding_dims
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    actor = Principal.for_human(membership.user, company, membership.role)
    parked = fact_publish(
        company=company, actor=actor, category="procedure",
        content="Automobiles are parked in the garage overnight.",
    )  # fmt: skip
    fact_publish(
        company=company, actor=actor, category="convention",
        content="Invoices are paid within thirty days.",
    )  # fmt: skip
    row = FactVersionEmbedding.objects.get(operation_id=parked.operation_id)
    assert row.embedder_id == "openai:wide-embed" and len(row.embedding) == dims
    found = query_facts(
        company=company, query=OrgMemoryQuery(context="automobiles overnight garage")
    )
    assert found[0].fact_id == parked.fact_id
    assert found[0].score == 1.0  # first on both legs: the dense leg compared its vectors


# --- the index each (embedder, width) gets ---------------------------------------------------


def plan(embedder_id: str, dims: int, *, shared: bool) -> str:
    """EXPLAIN of the dense leg's HNSW walk of a private or shared part (as
    ``memory.core.selectors.search.dense`` writes it)."""
    literal = vector_literal(np.ones(dims, dtype=np.float32) / np.sqrt(dims))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            f"EXPLAIN SELECT m.id FROM memory_memory m WHERE m.company_id = %s "
            f"AND {'' if shared else 'NOT '}m.is_shared "
            f"AND {dense_condition(embedder_id, dims, escape=True)} "
            f"ORDER BY {dense_distance(dims)} LIMIT 10",
            [1, literal],
        )
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_default_embedder_walks_its_partial_indexes():
    assert vector_index_state(MINILM_EMBEDDER_ID, 384) == "ready"
    for shared in (False, True):
        assert f"Index Scan using {index_name(MINILM_EMBEDDER_ID, 384, shared=shared)}" in plan(
            MINILM_EMBEDDER_ID, 384, shared=shared
        )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("dims", [1536, 3072])
def test_a_new_embedder_gets_its_own_index_built_concurrently(dims):
    embedder_id = f"openai:index-test-{dims}"
    assert ensure_vector_index(embedder_id, dims) in (True, False)  # False if already built
    assert vector_index_state(embedder_id, dims) == "ready"
    assert ensure_vector_index(embedder_id, dims) is False  # idempotent
    for shared in (False, True):
        name = index_name(embedder_id, dims, shared=shared)
        assert vector_index_state(embedder_id, dims, shared=shared) == "ready"
        assert f"Index Scan using {name}" in plan(embedder_id, dims, shared=shared)
        # another width under the same id is not this index's rows
        assert name not in plan(embedder_id, 768, shared=shared)
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
            (definition,) = cursor.fetchone()
        kind = "halfvec" if dims > 2000 else "vector"
        assert f"(embedding)::{kind}({dims})" in definition
        assert f"{kind}_cosine_ops" in definition
        assert f"vector_dims(embedding) = {dims}" in definition
        assert definition.endswith("AND is_shared)" if shared else "AND (NOT is_shared))")


def test_building_an_index_inside_a_transaction_is_refused():
    with pytest.raises(RuntimeError, match="cannot run inside a transaction"):
        ensure_vector_index("openai:never", 768)
