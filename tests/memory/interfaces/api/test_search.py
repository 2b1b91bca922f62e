"""POST /memories/search and POST /shared/search (thin views over the retrieval pipeline)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from tests.memory.factories import MemoryFactory

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memories/search"
SHARED_SEARCH = "/api/v1/shared/search"


def store(caller, content, category="semantic", **fields):
    body = {"content": content, "category": category, **fields}
    response = caller.client.post("/api/v1/memories", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def publish(caller, content, category="procedural"):
    body = {"content": content, "category": category}
    response = caller.client.post("/api/v1/shared", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def search(caller, url=SEARCH, **body):
    response = caller.client.post(url, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_search_returns_ranked_entries(caller):
    deploy = store(caller, "The billing service deploys every Friday at noon UTC.", tags=["ops"])
    store(caller, "Ana prefers tea over coffee in the morning.", category="social")
    body = search(caller, query="when does the billing service deploy?", include_shared=False)
    assert body["degraded"] == []
    top = body["results"][0]
    assert set(top) == {
        "memory", "relevance", "recency", "combined", "dense_rank", "sparse_rank", "is_shared"
    }  # fmt: skip
    assert top["memory"]["id"] == deploy
    assert top["memory"]["content"] == "The billing service deploys every Friday at noon UTC."
    assert top["memory"]["tags"] == ["ops"]
    assert (top["dense_rank"], top["sparse_rank"], top["is_shared"]) == (1, 1, False)
    # the product default is RRF: combined is the min-max normalised fused score (the best
    # hit 1.0), relevance the cosine similarity, recency unused
    assert 0 < top["relevance"] <= 1 and top["recency"] == 0.0 and top["combined"] == 1.0


def test_search_filters(caller):
    store(caller, "Deploy checklist: run migrations first.", category="procedural", tags=["deploy"])
    store(
        caller, "The deploy on Friday broke checkout.", category="episodic", namespace="incidents"
    )
    only_procedural = search(caller, query="deploy", categories=["procedural"])
    assert [r["memory"]["category"] for r in only_procedural["results"]] == ["procedural"]
    only_ns = search(caller, query="deploy", namespaces=["incidents"])
    assert [r["memory"]["namespace"] for r in only_ns["results"]] == ["incidents"]
    tagged = search(caller, query="deploy", tags=["DEPLOY"])
    assert [r["memory"]["tags"] for r in tagged["results"]] == [["deploy"]]


def test_search_never_returns_expired_or_superseded(caller):
    old = store(caller, "The VPN password rotates monthly.")
    store(caller, "VPN credentials now rotate every week.", supersedes=[old])
    MemoryFactory(
        agent=caller.agent,
        content="The VPN gateway moved to vpn2.example.com.",
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    ids = [r["memory"]["id"] for r in search(caller, query="VPN password rotation")["results"]]
    assert old not in ids
    assert len(ids) == 1
    assert Memory.objects.count() == 3


def test_search_isolation_and_shared_knowledge(caller, peer, outsider):
    store(peer, "Peer private: the payroll batch runs on the 25th.")
    store(outsider, "Outsider: the payroll batch runs on the 25th.")
    shared = publish(peer, "Payroll questions go to the finance channel.")
    publish(outsider, "Outsider shared: payroll is outsourced.")
    body = search(caller, query="payroll batch")
    assert [r["memory"]["id"] for r in body["results"]] == [shared]
    assert body["results"][0]["is_shared"] is True
    assert search(caller, query="payroll batch", include_shared=False)["results"] == []


def test_shared_search_and_exclude_self(caller, peer, outsider):
    mine = publish(caller, "Staging resets every night at 02:00 UTC.")
    theirs = publish(peer, "Staging database snapshots are taken at 01:00 UTC.")
    publish(outsider, "Staging resets at 03:00 (outsider).")
    store(caller, "Private: staging reset broke my tests.")
    ids = {
        r["memory"]["id"] for r in search(caller, SHARED_SEARCH, query="staging reset")["results"]
    }
    assert ids == {mine, theirs}
    excluded = search(caller, SHARED_SEARCH, query="staging reset", exclude_self=True)
    assert [r["memory"]["id"] for r in excluded["results"]] == [theirs]


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        (SEARCH, {"query": "x", "limit": 0}, "limit"),
        (SEARCH, {"query": "x", "limit": 101}, "limit"),
        (SEARCH, {"query": "x", "categories": ["gossip"]}, "categories.0"),
        (SEARCH, {"query": "x", "tags": [" "]}, "tags"),
        (SEARCH, {"query": "x", "min_relevance": 2}, "min_relevance"),
        (
            SEARCH,
            {"query": "x", "since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
            None,
        ),
        (SEARCH, {"query": "x", "exclude_self": True}, "exclude_self"),
        (SEARCH, {"query": "x" * 4001}, "query"),
        (SHARED_SEARCH, {"query": "x", "include_shared": True}, "include_shared"),
        (SHARED_SEARCH, {"query": "x", "limit": "many"}, "limit"),
    ],
)
def test_search_rejects_invalid_input(caller, url, body, field):
    response = caller.client.post(url, body, format="json")
    assert response.status_code == 400, response.json()
    problem = response.json()
    assert problem["code"] == "validation_error"
    if field is not None:
        assert field in [e["field"] for e in problem["errors"]], problem


def test_search_is_for_agents(human_client):
    assert human_client.post(SEARCH, {"query": "x"}, format="json").status_code == 403
    assert human_client.post(SHARED_SEARCH, {"query": "x"}, format="json").status_code == 403


def test_search_degrades_to_sparse_when_the_embedder_fails(caller, failing_embedder):
    stored = store(caller, "The billing service deploys every Friday at noon UTC.")
    store(caller, "Ana prefers tea over coffee.", category="social")
    body = search(caller, query="billing deploys", include_shared=False)
    assert body["degraded"] == ["dense"]
    assert [r["memory"]["id"] for r in body["results"]] == [stored]
    hit = body["results"][0]
    assert (hit["dense_rank"], hit["sparse_rank"]) == (None, 1)
    assert hit["memory"]["embedding_status"] == "pending"
