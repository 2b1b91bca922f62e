"""A context request embeds its query once (org facts and memories share the vector), and a
repeated query is served from the per-process cache."""

import pytest

from orgmemory.services.facts import fact_publish
from persistence.principal import Principal
from synthorg.embedding import default_embedder, query_embedding_cache
from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

QUERY = "when does the billing service deploy?"


@pytest.fixture
def embed_calls(monkeypatch, settings):
    """Every batch the process-wide MiniLM instance embeds (the real model still runs)."""
    settings.ORGMEMORY_EMBEDDINGS = True
    embedder = default_embedder()
    calls: list[list[str]] = []
    real_embed = embedder.embed

    def counting_embed(texts):
        calls.append(list(texts))
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed", counting_embed)
    return calls


def test_a_context_request_embeds_the_query_once(caller, embed_calls):
    membership = MembershipFactory(company=caller.company, role="admin", user__password=None)
    human = Principal.for_human(membership.user, caller.company, membership.role)
    fact_publish(
        company=caller.company,
        actor=human,
        content="Billing deploys need a second approver.",
        category="procedure",
    )
    response = caller.client.post(
        "/api/v1/memories",
        {
            "content": "The billing service deploys every Friday at noon UTC.",
            "category": "semantic",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert len(embed_calls) == 2  # the fact and the memory, each at write time
    embed_calls.clear()

    body = {"query": QUERY, "token_budget": 500}
    response = caller.client.post("/api/v1/memories/context", body, format="json")
    assert response.status_code == 200, response.json()
    text = "\n".join(m["content"] for m in response.json()["messages"])
    assert "second approver" in text and "every Friday at noon" in text
    assert embed_calls == [[QUERY]]

    response = caller.client.post("/api/v1/memories/context", body, format="json")
    assert response.status_code == 200
    assert embed_calls == [[QUERY]]  # the repeated query came from the cache
    assert query_embedding_cache.hits >= 2
