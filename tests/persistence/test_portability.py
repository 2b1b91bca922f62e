"""Data portability and erasure: JSONL export (command + operator endpoint), idempotent
import (ids kept or remapped, vectors reused or recomputed), and one audited erasure."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from persistence.content_registry import content_kinds
from persistence.models import Agent, AgentApiKey, AuditEntry
from persistence.services.erasure import agent_erase
from persistence.services.portability import content_export, content_import
from synthorg.errors import InvalidInputError
from tests.conftest import make_agent_caller
from tests.memory.conftest import use_remote_embedder
from tests.persistence.conftest import make_human_client
from tests.persistence.factories import CompanyFactory
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

SECRET = "The vault code is 4-8-15-16-23-42"
ERASED = {
    "memories": 0,
    "shared knowledge": 0,
    "archived memories": 0,
    "channel messages": 0,
    "checkpoints": 0,
    "parked contexts": 0,
    "conversation messages": 0,
    "extraction runs": 0,
    "journal entries": 0,
    "dream diary entries": 0,
    "conversations": 0,
    "compressed experiences": 0,
    "org skills": 0,
    "dream requests": 0,
    "request log entries": 0,
    "execution report subjects": 0,
}


def _store(caller, content, **extra):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": "semantic", **extra}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def _share(caller, content):
    response = caller.client.post(
        "/api/v1/shared", {"content": content, "category": "semantic"}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def _archive(agent, content):
    now = timezone.now()
    return ArchivedMemory.objects.create(
        company=agent.company,
        agent=agent,
        original_id=uuid.uuid4(),
        namespace="default",
        category="episodic",
        content=content,
        created_at=now - timedelta(days=60),
        archived_at=now,
        mode="extractive",
    )


@pytest.fixture
def stocked(caller, peer):
    """``caller`` holds two private memories, one shared, one archived; ``peer`` one memory."""
    ids = {
        "private": [_store(caller, SECRET), _store(caller, "Deploys happen on Fridays")],
        "shared": [_share(caller, "The staging cluster is called tern")],
        "archive": [str(_archive(caller.agent, "Old incident notes about tern").pk)],
        "peer": [_store(peer, "Peer knows the on-call rota")],
    }
    return ids


def _rows(lines):
    records = [json.loads(line) for line in lines]
    return records[0], records[1:]


def test_registry_lists_memory_kinds_in_order():
    names = [k.name for k in content_kinds()]
    assert names[:3] == ["memory", "shared_knowledge", "archived_memory"]


def test_agent_export_holds_only_that_agents_rows(caller, peer, stocked):
    header, rows = _rows(content_export(company=caller.company, agent=caller.agent))
    assert header["type"] == "synthorg_export" and header["version"] == 1
    assert (header["company"], header["agent"]) == (caller.company.slug, caller.agent.name)
    by_type = {}
    for row in rows:
        by_type.setdefault(row["type"], []).append(row["id"])
    assert sorted(by_type["memory"]) == sorted(stocked["private"])
    assert by_type["shared_knowledge"] == stocked["shared"]
    assert by_type["archived_memory"] == stocked["archive"]
    assert {r["agent"] for r in rows} == {caller.agent.name}
    memory = next(r for r in rows if r["id"] == stocked["private"][0])
    assert memory["content"] == SECRET
    assert memory["embedder_id"]
    vector = np.frombuffer(base64.b64decode(memory["embedding"]), dtype="<f4")
    stored = Memory.objects.get(pk=memory["id"]).embedding
    assert vector.shape == (384,) and np.allclose(vector, stored)
    assert set(memory) >= {"level", "session_id", "project", "created_at", "superseded_by", "tags"}
    entry = AuditEntry.objects.get(action_type="content.exported")
    assert (entry.target_type, entry.target_id) == ("agent", str(caller.agent.pk))


def test_company_export_covers_every_agent_but_no_other_company(caller, peer, outsider, stocked):
    _store(outsider, "Outsider secret plans")
    _header, rows = _rows(content_export(company=caller.company))
    assert {r["agent"] for r in rows} == {caller.agent.name, peer.agent.name}
    assert "Outsider secret plans" not in json.dumps(rows)


def test_import_into_another_company_remaps_ids_and_reuses_vectors(caller, stocked):
    lines = list(content_export(company=caller.company))
    target = CompanyFactory()
    results = content_import(company=target, lines=lines)
    assert vars(results["memory"]) == {
        "created": 3,  # the caller's two and the peer's one
        "skipped": 0,
        "remapped": 3,  # the ids belong to the first company
        "embedded": 0,  # same embedder: the exported vectors are reused
        "pending": 0,
    }
    assert results["shared_knowledge"].created == 1
    assert results["archived_memory"].created == 1
    imported = Memory.objects.get(company=target, content=SECRET)
    assert str(imported.pk) not in stocked["private"]
    assert imported.agent.name == caller.agent.name and imported.agent.company == target
    assert imported.embedding_status == "ready"
    original = Memory.objects.get(pk=stocked["private"][0])
    assert list(imported.embedding) == list(original.embedding)
    # Importing the same file again adds nothing: the remapped ids are found again.
    again = content_import(company=target, lines=lines)
    assert (again["memory"].created, again["memory"].skipped) == (0, 3)
    assert (again["archived_memory"].created, again["archived_memory"].skipped) == (0, 1)
    assert Memory.objects.filter(company=target).count() == 4


def test_reimport_into_the_same_company_is_idempotent_and_keeps_ids(caller, stocked):
    lines = list(content_export(company=caller.company, agent=caller.agent))
    before = Memory.objects.filter(company=caller.company).count()
    results = content_import(company=caller.company, lines=lines)
    assert results["memory"].skipped == 2 and results["memory"].created == 0
    assert Memory.objects.filter(company=caller.company).count() == before
    # After erasure, the same file restores the rows under their original ids.
    agent_erase(agent=caller.agent)
    restored = content_import(company=caller.company, lines=lines)
    assert vars(restored["memory"]) == {
        "created": 2,
        "skipped": 0,
        "remapped": 0,
        "embedded": 0,
        "pending": 0,
    }
    assert set(
        str(pk) for pk in Memory.objects.filter(agent=caller.agent).values_list("pk", flat=True)
    ) == set(stocked["private"] + stocked["shared"])
    assert ArchivedMemory.objects.get(agent=caller.agent).pk.__str__() == stocked["archive"][0]


def test_import_recomputes_vectors_when_the_embedder_differs(caller, stocked):
    lines = list(content_export(company=caller.company, agent=caller.agent))
    target = CompanyFactory()
    with FakeOpenAIServer(embedding_dims=384) as server:
        use_remote_embedder(target, server)
        results = content_import(company=target, lines=lines)
        calls = server.requests_to("/v1/embeddings")
    assert results["memory"].embedded == 2 and results["shared_knowledge"].embedded == 1
    assert len(calls) == 2  # one batch per kind
    row = Memory.objects.get(company=target, content=SECRET)
    assert row.embedder_id != Memory.objects.get(pk=stocked["private"][0]).embedder_id
    assert row.embedding_status == "ready"


def test_a_broken_file_imports_nothing():
    target = CompanyFactory()
    header = json.dumps({"type": "synthorg_export", "version": 1})
    good = json.dumps({"type": "memory", "agent": "a", "content": "x", "category": "semantic"})
    with pytest.raises(InvalidInputError, match="Line 3: not JSON"):
        content_import(company=target, lines=[header, good, "{oops"])
    with pytest.raises(InvalidInputError, match="unknown row type 'audit'"):
        content_import(company=target, lines=[header, json.dumps({"type": "audit"})])
    with pytest.raises(InvalidInputError, match="Line 1 must be a synthorg_export header"):
        content_import(company=target, lines=[good])
    assert not Memory.objects.filter(company=target).exists()
    assert not Agent.objects.filter(company=target).exists()


def test_erasure_removes_all_content_revokes_keys_and_audits_counts_only(caller, peer, stocked):
    report = agent_erase(agent=caller.agent, reason="GDPR request #12")
    assert report.counts == {**ERASED, "memories": 2, "shared knowledge": 1, "archived memories": 1}
    assert report.keys_revoked == 1
    assert not Memory.objects.filter(agent=caller.agent).exists()
    assert not ArchivedMemory.objects.filter(agent=caller.agent).exists()
    assert Memory.objects.filter(agent=peer.agent).count() == 1  # the peer keeps its own
    caller.agent.refresh_from_db()
    assert caller.agent.is_active is False
    assert not AgentApiKey.objects.filter(agent=caller.agent, revoked_at__isnull=True).exists()
    assert caller.client.get("/api/v1/me").status_code == 401
    entry = AuditEntry.objects.get(action_type="agent.erased")
    assert entry.details == {
        "counts": {**ERASED, "memories": 2, "shared knowledge": 1, "archived memories": 1},
        "keys_revoked": 1,
        "retained": ["execution reports"],
        "reason": "GDPR request #12",
    }
    # Nothing an agent stored survives in the append-only audit trail.
    ledger = json.dumps(list(AuditEntry.objects.values("details", "target_id")))
    for text in (SECRET, "Deploys happen", "tern", "Old incident"):
        assert text not in ledger
    # Erasing again finds nothing more.
    assert agent_erase(agent=caller.agent).counts == ERASED


def test_erase_endpoint_for_admins_only(company, caller, peer, stocked, outsider):
    admin = make_human_client(company, "admin")
    operator = make_human_client(company, "operator")
    url = f"/api/v1/agents/{caller.agent.pk}/erase"
    denied = operator.post(url, {"reason": "x"}, format="json")
    assert denied.status_code == 403 and denied.json()["code"] == "role_insufficient"
    assert peer.client.post(url, {}, format="json").status_code == 403
    unknown = admin.post(url, {"reason": "x", "force": True}, format="json")
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "force"
    missing = admin.post(f"/api/v1/agents/{outsider.agent.pk}/erase", {}, format="json")
    assert missing.status_code == 404
    assert Memory.objects.filter(agent=caller.agent).count() == 3  # nothing erased yet
    response = admin.post(url, {"reason": "offboarding"}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "agent_id": caller.agent.pk,
        "counts": {**ERASED, "memories": 2, "shared knowledge": 1, "archived memories": 1},
        "keys_revoked": 1,
        "retained": ["execution reports"],
        "is_active": False,
    }
    assert AuditEntry.objects.get(action_type="agent.erased").actor_user_id == (
        admin.membership.user_id
    )


def test_export_endpoint_streams_jsonl_to_admins(company, caller, stocked, outsider):
    admin = make_human_client(company, "admin")
    response = admin.get(f"/api/v1/export?agent={caller.agent.pk}")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    header, rows = _rows(lines)
    assert header["agent"] == caller.agent.name and len(rows) == 4
    assert caller.client.get("/api/v1/export").status_code == 403
    assert make_human_client(company, "operator").get("/api/v1/export").status_code == 403
    assert admin.get(f"/api/v1/export?agent={outsider.agent.pk}").status_code == 404
    bad = admin.get("/api/v1/export?agnet=1")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "agnet"


def test_commands_round_trip(tmp_path, caller, stocked, capsys):
    out = tmp_path / "export.jsonl"
    call_command(
        "export_memories", caller.company.slug, "--agent", caller.agent.name, "--out", str(out)
    )
    assert len(out.read_text().splitlines()) == 5
    assert "memory 2, shared_knowledge 1, archived_memory 1" in capsys.readouterr().err
    target = CompanyFactory()
    call_command("import_memories", target.slug, str(out))
    assert "memory: created 2, skipped 0, remapped 2" in capsys.readouterr().out
    assert Memory.objects.filter(company=target).count() == 3
    call_command("erase_agent", caller.company.slug, caller.agent.name, "--yes")
    assert "memories: 2 deleted" in capsys.readouterr().out
    assert not Memory.objects.filter(agent=caller.agent).exists()


def test_erasure_keeps_other_agents_of_a_fresh_caller(company):
    """A second caller created after an erasure is unaffected (no company-wide side effect)."""
    first = make_agent_caller(company=company)
    _store(first, "first agent memory")
    agent_erase(agent=first.agent)
    second = make_agent_caller(company=company)
    _store(second, "second agent memory")
    assert Memory.objects.filter(company=company).count() == 1


def test_erasure_covers_operational_content_and_retains_append_only_kinds(caller, monkeypatch):
    from persistence.content_registry import ContentKind, _kinds, table_is_append_only
    from persistence.models import Checkpoint, Message, ParkedContext
    from persistence.principal import Principal
    from persistence.services.messaging import message_send
    from persistence.services.runtime import checkpoint_save, parked_context_park

    me = Principal.for_agent(caller.agent)
    message_send(principal=me, channel="ops", content=SECRET)
    checkpoint_save(principal=me, execution_id="e1", state={"scratch": SECRET})
    parked_context_park(principal=me, execution_id="e1", context={"note": SECRET})
    assert table_is_append_only("persistence_auditentry")
    assert not table_is_append_only("memory_memory")
    erased = []
    monkeypatch.setitem(
        _kinds,
        "ledger_probe",
        ContentKind(
            name="ledger_probe",
            label="ledger probe",
            export=lambda company, agent: iter(()),
            erase=lambda agent: erased.append(agent) or 0,
            table="persistence_auditentry",
        ),
    )
    report = agent_erase(agent=caller.agent)
    assert report.counts == {
        **ERASED,
        "channel messages": 1,
        "checkpoints": 1,
        "parked contexts": 1,
    }
    assert report.retained == ("execution reports", "ledger probe") and erased == []
    for model, field in (
        (Message, "sender_agent"),
        (Checkpoint, "agent"),
        (ParkedContext, "agent"),
    ):
        assert not model.objects.filter(**{field: caller.agent}).exists()
    assert AuditEntry.objects.get(action_type="agent.erased").details["retained"] == [
        "execution reports",
        "ledger probe",
    ]


def test_import_endpoint_round_trip_and_hostile_bodies(company, caller, stocked, outsider):
    body = "".join(content_export(company=caller.company, agent=caller.agent))
    target_admin = make_human_client(outsider.company, "admin")
    response = target_admin.post("/api/v1/import", body, content_type="application/x-ndjson")
    assert response.status_code == 200, response.json()
    assert response.json()["counts"]["memory"] == {
        "created": 2,
        "skipped": 0,
        "remapped": 2,
        "embedded": 0,
        "pending": 0,
    }
    again = target_admin.post("/api/v1/import", body, content_type="application/x-ndjson")
    assert again.json()["counts"]["memory"]["skipped"] == 2
    assert Memory.objects.filter(company=outsider.company, content=SECRET).count() == 1
    operator = make_human_client(outsider.company, "operator")
    denied = operator.post("/api/v1/import", body, content_type="application/x-ndjson")
    assert denied.status_code == 403
    assert (
        outsider.client.post(
            "/api/v1/import", body, content_type="application/x-ndjson"
        ).status_code
        == 403
    )
    header = json.dumps({"type": "synthorg_export", "version": 1})
    at = "2026-01-01T00:00:00+00:00"
    row = {
        "type": "memory",
        "agent": "x",
        "category": "semantic",
        "content": "ok",
        "created_at": at,
        "updated_at": at,
    }
    hostile = [
        ("", "Line 1 must be a synthorg_export header"),
        (b"\xff\xfe", "not UTF-8"),
        (header + "\n" + "[" * 5000, "Line 2: not JSON"),
        (header + "\n" + json.dumps({**row, "content": "a\u0000b"}), "NUL"),
        (header + "\n" + json.dumps({**row, "content": "\ud800"}), "surrogate"),
        (header + "\n" + json.dumps({**row, "category": "nonsense"}), "category"),
        (header + "\n" + json.dumps({**row, "confidence": 7}), "memory_confidence_range"),
        (header + "\n" + json.dumps({**row, "level": "session"}), "memory_session_level"),
        (header + "\n" + json.dumps({**row, "created_at": None}), "created_at"),
        (header + "\n" + json.dumps({**row, "created_at": "yesterday"}), "created_at"),
        (header + "\n" + json.dumps({**row, "created_at": "2026-02-30T00:00:00Z"}), "created_at"),
        (header + "\n" + json.dumps({**row, "agent": ""}), "no agent"),
        (header + "\n" + json.dumps({**row, "agent": "a" * 300}), "no agent"),
        (header + "\n" + json.dumps({**row, "id": "not-a-uuid"}), "id is not a UUID"),
        (header + "\n" + json.dumps({**row, "tags": "x" * 100}), "Row"),
    ]
    before = Memory.objects.filter(company=outsider.company).count()
    for text, expected in hostile:
        response = target_admin.post(
            "/api/v1/import",
            text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"),
            content_type="application/x-ndjson",
        )
        assert response.status_code == 400, (
            text[:80],
            response.status_code,
            response.content[:300],
        )
        assert expected in json.dumps(response.json()), (text[:80], response.json())
    assert Memory.objects.filter(company=outsider.company).count() == before
    wrong_type = target_admin.post("/api/v1/import", body, content_type="application/json")
    assert wrong_type.status_code == 415


def test_a_row_repeated_in_one_file_is_imported_once(caller, stocked):
    header, *rows = list(content_export(company=caller.company, agent=caller.agent))
    memory_row = next(r for r in rows if json.loads(r)["type"] == "memory")
    target = CompanyFactory()
    results = content_import(company=target, lines=[header, memory_row, memory_row])
    assert (results["memory"].created, results["memory"].skipped) == (1, 1)
    assert Memory.objects.filter(company=target).count() == 1


def _crafted_file(row_id: str, agent: str = "prober") -> str:
    header = {"type": "synthorg_export", "version": 1, "company": "x", "agent": None}
    row = {
        "type": "memory",
        "id": row_id,
        "agent": agent,
        "content": "probe",
        "category": "semantic",
        "created_at": "2026-01-02T03:04:05+00:00",
        "updated_at": "2026-01-02T03:04:05+00:00",
    }
    return json.dumps(header) + "\n" + json.dumps(row) + "\n"


def test_import_answers_the_same_whether_an_id_exists_in_another_company(caller, stocked):
    """The counts (and the ids given) must not tell whether another company holds an id."""
    foreign = stocked["private"][0]  # a memory of the caller's company
    unused = str(uuid.uuid4())
    answers, given = [], []
    for row_id in (foreign, unused):
        prober = CompanyFactory()
        client = make_human_client(prober, "admin")
        response = client.post(
            "/api/v1/import", _crafted_file(row_id), content_type="application/x-ndjson"
        )
        assert response.status_code == 200, response.content
        answers.append(response.json())
        memory = Memory.objects.get(company=prober, content="probe")
        given.append(str(memory.pk) == row_id)
    assert answers[0] == answers[1]
    assert answers[0]["counts"]["memory"] == {
        "created": 1,
        "skipped": 0,
        "remapped": 1,
        "embedded": 1,
        "pending": 0,
    }
    assert given == [False, False]  # neither row kept the id it named
    assert Memory.objects.get(pk=foreign).company == caller.company  # untouched


def test_a_signature_of_another_company_does_not_keep_the_id(caller, stocked):
    """A row copied from another company's export (signature and all) is remapped too."""
    lines = list(content_export(company=caller.company, agent=caller.agent))
    agent_erase(agent=caller.agent)  # the ids are free again
    target = CompanyFactory()
    results = content_import(company=target, lines=lines)
    assert results["memory"].remapped == results["memory"].created == 2
    kept = Memory.objects.filter(company=target, pk__in=stocked["private"]).count()
    assert kept == 0
