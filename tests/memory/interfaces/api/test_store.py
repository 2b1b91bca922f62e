"""POST /api/v1/memories: one memory or a batch, the write gate, supersession, levels and
degraded mode (embedder down)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.core.models.memory import Memory
from persistence.services.projects import project_close, project_create
from tests.conftest import make_agent_caller

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories"


def post(caller, body):
    return caller.client.post(URL, body, format="json")


def memory_body(content="The billing service deploys every Friday at noon UTC.", **fields):
    return {"content": content, "category": "semantic", **fields}


def assert_problem(response, status, code, field=None):
    assert response.status_code == status, response.json()
    body = response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert body["code"] == code, body
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body
    return body


# --- success --------------------------------------------------------------------------------


def test_store_one_memory(caller):
    response = post(
        caller,
        memory_body(
            tags=["Deploy", " billing ", "deploy"],
            source="task-481",
            confidence=0.9,
            namespace="ops",
            context="asked by Ana",
        ),
    )
    assert response.status_code == 201
    row = Memory.objects.get()
    assert response.json() == {
        "id": str(row.id),
        "stored": True,
        "deduplicated": False,
        "embedding_status": "ready",
    }
    assert (row.company_id, row.agent_id, row.namespace, row.category) == (
        caller.company.pk,
        caller.agent.pk,
        "ops",
        "semantic",
    )
    assert row.tags == ["deploy", "billing"]
    assert (row.source, row.confidence, row.context) == ("task-481", 0.9, "asked by Ana")
    assert (row.level, row.session_id, row.project_id, row.is_shared) == (
        "persistent",
        "",
        None,
        False,
    )
    from synthorg.embedding import MINILM_EMBEDDER_ID

    assert row.embedder_id == MINILM_EMBEDDER_ID
    assert len(row.embedding) == 384
    assert row.search_vector is not None and row.doc_length > 0


def test_store_uses_the_company_embedder_override(caller, remote_embedder):
    response = post(caller, memory_body())
    assert response.status_code == 201
    row = Memory.objects.get()
    assert row.embedder_id == "openai:fake-embed"
    assert len(remote_embedder.requests_to(remote_embedder.EMBEDDINGS)) == 1


def test_store_import_with_past_created_at_and_expiry(caller):
    created = timezone.now() - timedelta(days=30)
    expires = timezone.now() + timedelta(days=5)
    response = post(
        caller, memory_body(created_at=created.isoformat(), expires_at=expires.isoformat())
    )
    assert response.status_code == 201
    row = Memory.objects.get()
    assert row.created_at == created and row.expires_at == expires


# --- validation (nothing is written) --------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"category": "semantic"}, "content", "required"),
        ({"content": "   ", "category": "semantic"}, "content", "value_error"),
        ({"content": "x" * 20_001, "category": "semantic"}, "content", "max_length"),
        ({"content": "x"}, "category", "required"),
        ({"content": "x", "category": "gossip"}, "category", "invalid_choice"),
        ({"content": "x", "category": "semantic", "confidence": 1.5}, "confidence", "max_value"),
        ({"content": "x", "category": "semantic", "confidence": -0.1}, "confidence", "min_value"),
        ({"content": "x", "category": "semantic", "tags": ["ok", "  "]}, "tags", "value_error"),
        ({"content": "x", "category": "semantic", "tags": ["t" * 65]}, "tags.1", None),
        ({"content": "x", "category": "semantic", "namespace": "  "}, "namespace", "blank"),
        ({"content": "x", "category": "semantic", "owner": 3}, "owner", "unknown_field"),
        ({"content": "x", "category": "semantic", "project_id": 0}, "project_id", "min_value"),
        (
            {"content": "x", "category": "semantic", "supersedes": ["nope"]},
            "supersedes.0",
            "invalid",
        ),
        (
            {"content": "x", "category": "semantic", "expires_at": "tomorrow"},
            "expires_at",
            "invalid",
        ),
    ],
)
def test_store_rejects_invalid_input(caller, body, field, code):
    response = post(caller, body)
    problem = assert_problem(response, 400, "validation_error")
    fields = {e["field"]: e["code"] for e in problem["errors"]}
    if field == "tags.1":
        assert any(f.startswith("tags") for f in fields), fields
    else:
        assert field in fields, fields
        if code is not None:
            assert fields[field] == code, fields
    assert not Memory.objects.exists()


def test_store_rejects_expiry_in_the_past(caller):
    past = (timezone.now() - timedelta(seconds=1)).isoformat()
    assert_problem(post(caller, memory_body(expires_at=past)), 400, "expires_in_past", "expires_at")
    assert not Memory.objects.exists()


def test_store_rejects_created_at_in_the_future(caller):
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    body = assert_problem(
        post(caller, memory_body(created_at=future)), 400, "created_in_future", "created_at"
    )
    assert body["detail"].startswith("created_at may only be in the past")
    assert not Memory.objects.exists()


def test_store_rejects_expiry_before_creation(caller):
    created = timezone.now() - timedelta(days=3)
    response = post(
        caller,
        memory_body(
            created_at=created.isoformat(), expires_at=(created - timedelta(days=1)).isoformat()
        ),
    )
    assert_problem(response, 400, "validation_error")
    assert not Memory.objects.exists()


def test_store_requires_an_agent(human_client):
    response = human_client.post(URL, memory_body(), format="json")
    assert_problem(response, 403, "permission_denied")
    assert not Memory.objects.exists()


def test_store_requires_authentication(client, db):
    response = client.post(URL, memory_body(), content_type="application/json")
    assert response.status_code == 401
    assert not Memory.objects.exists()


# --- write gate -----------------------------------------------------------------------------


def test_near_duplicate_returns_the_existing_memory(caller):
    first = post(caller, memory_body("The billing service deploys every Friday at noon UTC."))
    again = post(caller, memory_body("the billing service deploys every friday, at noon (UTC)!"))
    assert again.status_code == 200
    assert again.json() == {**first.json(), "deduplicated": True}
    assert Memory.objects.count() == 1


def test_gate_is_per_agent_namespace_and_category(caller, peer):
    text = "The billing service deploys every Friday at noon UTC."
    first = post(caller, memory_body(text)).json()["id"]
    ids = {
        first,
        post(caller, memory_body(text, category="episodic")).json()["id"],
        post(caller, memory_body(text, namespace="other")).json()["id"],
        post(peer, memory_body(text)).json()["id"],
    }
    assert len(ids) == 4
    assert Memory.objects.count() == 4


def test_different_enough_content_is_stored(caller):
    post(caller, memory_body("The billing service deploys every Friday at noon UTC."))
    response = post(caller, memory_body("The search service deploys every Monday at dawn."))
    assert response.status_code == 201
    assert Memory.objects.count() == 2


# --- supersession ---------------------------------------------------------------------------


def test_supersede_marks_old_memories(caller):
    old = post(caller, memory_body("The VPN password rotates monthly.")).json()["id"]
    new = post(
        caller, memory_body("The VPN credentials now rotate weekly.", supersedes=[old])
    ).json()["id"]
    row = Memory.objects.get(pk=old)
    assert str(row.superseded_by_id) == new and row.superseded_at is not None
    listed = caller.client.get(URL).json()
    assert [m["id"] for m in listed["results"]] == [new]
    assert caller.client.get(f"{URL}/{old}").json()["superseded_by"] == new


def test_supersede_of_another_agents_memory_is_404(caller, peer):
    theirs = post(peer, memory_body("Peer secret about payroll.")).json()["id"]
    response = post(caller, memory_body("Mine.", supersedes=[theirs]))
    assert_problem(response, 404, "superseded_not_found", "supersedes.0")
    assert Memory.objects.get(pk=theirs).superseded_at is None
    assert Memory.objects.count() == 1


def test_supersede_twice_is_a_conflict(caller):
    old = post(caller, memory_body("Standup is at nine.")).json()["id"]
    post(caller, memory_body("Standup moved to ten.", supersedes=[old]))
    response = post(caller, memory_body("Standup moved to eleven.", supersedes=[old]))
    assert_problem(response, 409, "already_superseded")
    assert Memory.objects.count() == 2


# --- levels ---------------------------------------------------------------------------------


def test_level_none_stores_nothing(company):
    agent_caller = make_agent_caller(company=company, memory_level="none")
    response = post(agent_caller, memory_body())
    assert response.status_code == 200
    assert response.json() == {
        "id": None,
        "stored": False,
        "deduplicated": False,
        "embedding_status": None,
    }
    assert not Memory.objects.exists()


def test_session_level_requires_a_session_id(company):
    agent_caller = make_agent_caller(company=company, memory_level="session")
    assert_problem(post(agent_caller, memory_body()), 400, "session_id_required", "session_id")
    assert not Memory.objects.exists()
    response = post(agent_caller, memory_body(session_id="run-1"))
    assert response.status_code == 201
    row = Memory.objects.get()
    assert (row.level, row.session_id) == ("session", "run-1")


def test_project_level_binding(company, outsider):
    agent_caller = make_agent_caller(company=company, memory_level="project")
    project = project_create(company=company, name="apollo")
    foreign = project_create(company=outsider.company, name="foreign")
    closed = project_create(company=company, name="done")
    project_close(project=closed)

    assert_problem(post(agent_caller, memory_body()), 400, "project_id_required", "project_id")
    assert_problem(post(agent_caller, memory_body(project_id=foreign.pk)), 400, "project_not_found")
    assert_problem(post(agent_caller, memory_body(project_id=closed.pk)), 409, "project_closed")
    assert not Memory.objects.exists()

    response = post(agent_caller, memory_body(project_id=project.pk))
    assert response.status_code == 201
    row = Memory.objects.get()
    assert (row.level, row.project_id) == ("project", project.pk)


def test_project_close_purges_project_memories(company):
    agent_caller = make_agent_caller(company=company, memory_level="project")
    apollo = project_create(company=company, name="apollo")
    zeus = project_create(company=company, name="zeus")
    post(agent_caller, memory_body("Apollo uses Kafka.", project_id=apollo.pk))
    kept = post(agent_caller, memory_body("Zeus uses RabbitMQ.", project_id=zeus.pk)).json()["id"]
    project_close(project=apollo)
    assert [str(m.pk) for m in Memory.objects.all()] == [kept]
    from persistence.models import AuditEntry

    entry = AuditEntry.objects.get(action_type="project.closed")
    assert entry.details["hooks"]["memory_purge_project"] == {"memories_purged": 1}


# --- batch ----------------------------------------------------------------------------------


def test_batch_store_in_one_embedder_call(caller, remote_embedder):
    response = post(
        caller,
        {
            "memories": [
                memory_body("Ana leads the billing team."),
                memory_body("ana leads the billing team"),
                memory_body("Kafka retention is seven days.", category="procedural"),
            ]
        },
    )
    assert response.status_code == 201
    rows = {m.content: m for m in Memory.objects.all()}
    assert set(rows) == {"Ana leads the billing team.", "Kafka retention is seven days."}
    ana = str(rows["Ana leads the billing team."].id)
    kafka = str(rows["Kafka retention is seven days."].id)
    assert response.json() == {
        "results": [
            {"id": ana, "stored": True, "deduplicated": False, "embedding_status": "ready"},
            {"id": ana, "stored": True, "deduplicated": True, "embedding_status": "ready"},
            {"id": kafka, "stored": True, "deduplicated": False, "embedding_status": "ready"},
        ],
        "created": 2,
        "deduplicated": 1,
    }
    assert len(remote_embedder.requests_to(remote_embedder.EMBEDDINGS)) == 1


def test_batch_accepts_a_bare_list(caller):
    response = post(caller, [memory_body("One."), memory_body("Two different things.")])
    assert response.status_code == 201
    assert response.json()["created"] == 2


def test_batch_limits(caller):
    assert_problem(post(caller, {"memories": []}), 400, "validation_error", "memories")
    too_many = {"memories": [memory_body(f"fact {i}") for i in range(501)]}
    assert_problem(post(caller, too_many), 400, "validation_error", "memories")
    assert not Memory.objects.exists()


def test_batch_is_all_or_nothing(caller):
    response = post(
        caller,
        {"memories": [memory_body("Fine."), memory_body("   "), memory_body("Also fine.")]},
    )
    assert_problem(response, 400, "validation_error", "memories[1].content")
    past = (timezone.now() - timedelta(days=1)).isoformat()
    response = post(
        caller, {"memories": [memory_body("Fine."), memory_body("Late.", expires_at=past)]}
    )
    assert_problem(response, 400, "expires_in_past", "memories[1].expires_at")
    assert not Memory.objects.exists()


# --- degraded mode --------------------------------------------------------------------------


def test_store_when_the_embedder_fails_is_pending(caller, failing_embedder):
    response = post(caller, memory_body())
    assert response.status_code == 201
    row = Memory.objects.get()
    assert response.json() == {
        "id": str(row.id),
        "stored": True,
        "deduplicated": False,
        "embedding_status": "pending",
    }
    assert row.embedding is None and row.embedder_id == ""
    assert row.search_vector is not None  # the sparse leg still finds it


def test_store_when_the_embedder_is_unreachable(caller, company):
    import socket

    from tests.memory.conftest import use_remote_embedder

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now

    class Closed:
        base_url = f"http://127.0.0.1:{port}/v1"

    use_remote_embedder(company, Closed())
    response = post(caller, memory_body())
    assert response.status_code == 201
    assert response.json()["embedding_status"] == "pending"


def test_other_agents_and_companies_do_not_share_a_store(caller, peer, outsider):
    post(caller, memory_body("Caller fact about Redis."))
    post(outsider, memory_body("Caller fact about Redis."))
    assert Memory.objects.filter(agent=caller.agent).count() == 1
    assert Memory.objects.filter(agent=outsider.agent).count() == 1
    assert caller.client.get(URL).json()["count"] == 1
    assert peer.client.get(URL).json()["count"] == 0


def test_store_when_the_embedder_answers_500(caller, company):
    from tests.memory.conftest import use_remote_embedder
    from tests.support.openai_server import FakeOpenAIServer, ScriptedResponse, error_payload

    with FakeOpenAIServer(embedding_dims=384) as server:
        server.set_handler(
            server.EMBEDDINGS,
            lambda request: ScriptedResponse(status=500, json=error_payload("boom")),
        )
        use_remote_embedder(company, server)
        response = post(caller, memory_body())
        assert len(server.requests_to(server.EMBEDDINGS)) == 3  # first try + 2 retries
    assert response.status_code == 201
    assert response.json()["embedding_status"] == "pending"
    assert Memory.objects.get().embedding_status == "pending"


def test_batch_at_level_none(company):
    agent_caller = make_agent_caller(company=company, memory_level="none")
    response = post(agent_caller, {"memories": [memory_body("One."), memory_body("Two.")]})
    assert response.status_code == 200
    nothing = {"id": None, "stored": False, "deduplicated": False, "embedding_status": None}
    assert response.json() == {"results": [nothing, nothing], "created": 0, "deduplicated": 0}
    assert not Memory.objects.exists()


def test_session_memories_do_not_dedup_across_sessions(company):
    agent_caller = make_agent_caller(company=company, memory_level="session")
    first = post(agent_caller, memory_body("Build cache lives in /tmp/cache.", session_id="a"))
    again = post(agent_caller, memory_body("build cache lives in /tmp/cache", session_id="a"))
    other = post(agent_caller, memory_body("Build cache lives in /tmp/cache.", session_id="b"))
    assert again.json()["id"] == first.json()["id"] and again.json()["deduplicated"]
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_duplicates_are_not_sent_to_the_embedder(caller, remote_embedder):
    post(caller, memory_body("Ana leads the billing team."))
    again = post(caller, memory_body("ana leads the billing team"))
    assert again.json()["deduplicated"] is True
    requests = remote_embedder.requests_to(remote_embedder.EMBEDDINGS)
    assert [r.json()["input"] for r in requests] == [["Ana leads the billing team."]]


def test_batch_of_one_names_its_item(caller):
    past = (timezone.now() - timedelta(days=1)).isoformat()
    response = post(caller, {"memories": [memory_body("Late.", expires_at=past)]})
    assert_problem(response, 400, "expires_in_past", "memories[0].expires_at")


def test_a_hanging_embedder_degrades_within_the_budget_and_is_then_skipped(
    caller, company, outsider, settings
):
    """An embedder that accepts the connection and never answers: the memory is stored
    ``pending`` once the budget runs out (the worker is never killed mid-write), the next
    store skips the endpoint without connecting, and another company still embeds."""
    from tests.memory.conftest import use_remote_embedder
    from tests.support.hanging_server import HangingServer

    settings.SYNTHORG_EMBEDDER_TIMEOUT = 0.5
    settings.SYNTHORG_EMBEDDER_BUDGET = 1.0
    settings.SYNTHORG_EMBEDDER_COOLDOWN = 600
    with HangingServer() as server:
        use_remote_embedder(company, server)
        first = post(caller, memory_body("Billing deploys on Fridays."))
        assert first.status_code == 201, first.content
        assert first.json()["embedding_status"] == "pending"
        connected = server.connections
        assert connected >= 1
        second = post(caller, memory_body("The staging database is rebuilt nightly."))
        assert second.status_code == 201
        assert second.json()["embedding_status"] == "pending"
        assert server.connections == connected  # skipped: the circuit is open
        search = caller.client.post(
            "/api/v1/memories/search", {"query": "when does billing deploy"}, format="json"
        )
        assert search.status_code == 200
        assert search.json()["degraded"] == ["dense"]
        assert search.json()["results"][0]["memory"]["content"] == "Billing deploys on Fridays."
        other = post(outsider, memory_body("Billing deploys on Fridays."))
        assert other.status_code == 201
        assert other.json()["embedding_status"] == "ready"
    pending = Memory.objects.filter(agent=caller.agent).values_list("embedding_status", flat=True)
    assert sorted(pending) == ["pending", "pending"]
