"""Archive search and restore over REST: the round trip and isolation."""

import pytest

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from memory.core.services.maintenance import run_maintenance
from persistence.models import AuditEntry
from tests.memory.core.maintenance.conftest import configure, seed

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/archive/search"
CONFIG = {"strategy": "simple", "archival": {"enabled": True, "age_threshold_days": 30}}
NOTES = [
    "The billing deploy runs every Friday at noon (%(i)d).",
    "Kubernetes upgrade notes for the staging cluster (%(i)d).",
]


def restore_url(archive_id):
    return f"/api/v1/archive/{archive_id}/restore"


@pytest.fixture
def archived(caller, now):
    """Four archived memories of ``caller`` (two billing notes, two kubernetes notes)."""
    configure(caller.company, **CONFIG)
    seed(caller.agent, 3, now=now, age_days=40, category="episodic", template=NOTES[0])
    seed(caller.agent, 3, now=now, age_days=41, category="semantic", template=NOTES[1])
    run_maintenance(agent=caller.agent, now=now)
    assert ArchivedMemory.objects.filter(agent=caller.agent).count() == 4
    return ArchivedMemory.objects.filter(agent=caller.agent)


def test_search_returns_exact_payload_newest_first(caller, archived):
    response = caller.client.get(SEARCH, {"category": "episodic"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    rows = sorted(
        archived.filter(category="episodic"), key=lambda a: (-a.archived_at.timestamp(), str(a.pk))
    )
    first = rows[0]
    assert body["results"][0] == {
        "id": str(first.pk),
        "original_id": str(first.original_id),
        "agent_id": caller.agent.pk,
        "namespace": "default",
        "category": "episodic",
        "content": first.content,
        "context": "",
        "source": "",
        "confidence": 1.0,
        "tags": [],
        "metadata": first.metadata,
        "mode": "extractive",
        "created_at": first.created_at.isoformat().replace("+00:00", "Z"),
        "archived_at": first.archived_at.isoformat().replace("+00:00", "Z"),
        "summary_memory_id": str(first.summary_memory_id),
        "restored_at": None,
        "restored_memory_id": None,
    }


def test_text_search_matches_stemmed_words(caller, archived):
    body = caller.client.get(SEARCH, {"q": "kubernetes upgrades"}).json()
    assert body["count"] == 2
    assert all("Kubernetes upgrade" in r["content"] for r in body["results"])
    assert caller.client.get(SEARCH, {"q": "nonexistentword"}).json() == {
        "count": 0,
        "results": [],
    }
    assert caller.client.get(SEARCH, {"limit": 1}).json()["count"] == 1


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"category": "nope"}, "category"),
        ({"since": "yesterday"}, "since"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_search_parameters_are_400(caller, archived, params, field):
    response = caller.client.get(SEARCH, params)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    assert field in str(response.json())


def test_restore_round_trip(caller, archived, now):
    entry = archived.filter(category="semantic").first()
    response = caller.client.post(restore_url(entry.pk))
    assert response.status_code == 200, response.json()
    body = response.json()
    memory = Memory.objects.get(pk=body["memory_id"])
    entry.refresh_from_db()
    assert body == {
        "archive_id": str(entry.pk),
        "original_id": str(entry.original_id),
        "memory_id": str(memory.pk),
        "restored_at": entry.restored_at.isoformat().replace("+00:00", "Z"),
    }
    # back in the hot store: same content and category, original created_at, embedded
    assert (memory.agent_id, memory.content, memory.category, memory.created_at) == (
        caller.agent.pk,
        entry.content,
        "semantic",
        entry.created_at,
    )
    assert memory.embedding_status == "ready" and memory.embedding is not None
    assert memory.search_vector is not None and memory.doc_length > 0
    # …and found again by the retrieval pipeline (both legs)
    hits = memory_search(
        agent=caller.agent, query=MemoryQuery(text="kubernetes upgrade staging", limit=20)
    ).hits
    assert memory.pk in {hit.memory.pk for hit in hits}
    hit = next(h for h in hits if h.memory.pk == memory.pk)
    assert hit.dense_rank is not None and hit.sparse_rank is not None
    assert entry.restored_memory_id == memory.pk
    audit = AuditEntry.objects.get(action_type="memory.archive_restored")
    assert audit.actor_agent_id == caller.agent.pk and audit.target_id == str(entry.pk)
    # gone from the default search, visible with include_restored
    ids = [r["id"] for r in caller.client.get(SEARCH).json()["results"]]
    assert str(entry.pk) not in ids and len(ids) == 3
    ids = [
        r["id"] for r in caller.client.get(SEARCH, {"include_restored": "true"}).json()["results"]
    ]
    assert str(entry.pk) in ids
    # a second restore is refused and changes nothing
    again = caller.client.post(restore_url(entry.pk))
    assert again.status_code == 409
    assert again.json()["code"] == "archive_already_restored"
    assert Memory.objects.filter(agent=caller.agent, content=entry.content).count() == 1


def test_other_agents_archive_is_invisible(caller, peer, outsider, archived):
    entry = archived.first()
    for other in (peer, outsider):
        assert other.client.get(SEARCH).json() == {"count": 0, "results": []}
        response = other.client.post(restore_url(entry.pk))
        assert response.status_code == 404
        assert response.json()["code"] == "archive_not_found"
    entry.refresh_from_db()
    assert entry.restored_at is None
    assert (
        caller.client.post(restore_url("00000000-0000-0000-0000-000000000000")).status_code == 404
    )


def test_humans_cannot_use_the_agent_archive_endpoints(human_client, archived):
    assert human_client.get(SEARCH).status_code == 403
    assert human_client.post(restore_url(archived.first().pk)).status_code == 403
