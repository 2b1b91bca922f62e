"""End users (``subject``, issue 32 item 4): validated on every write, filterable in list,
search, context and export, read across the company's agents by the principals allowed to,
and erased across every agent of the company in one audited transaction — after which no
row of any table names the subject or holds its text, while another subject's data and
another company's are untouched."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models import (
    Memory,
    MemoryChunk,
    MemoryRevision,
    RequestLogEntry,
)
from memory.core.services.archive import ArchivalMode, memories_archive_out
from memory.core.services.edit import memory_correct
from memory.core.services.maintenance import MemoryConsolidationService
from memory.core.services.store import memory_store
from memory.ingestion.models import Conversation, ConversationMessage, ExtractionRun, JournalEntry
from memory.ingestion.services.extraction import conversation_extract
from memory.procedural.models import ExecutionReport, ExecutionReportSubject
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.erasure import subject_erase
from persistence.services.portability import content_export
from synthorg.company_config.memory import ConsolidationConfig
from synthorg.subjects import subject_digest
from tests.conftest import make_agent_caller
from tests.persistence.conftest import make_human_client
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

SUBJECT = "user-42"
OTHER = "user-7"
#: words only the erased subject's data holds (in this company)
MARK = "Quokkafriend"
#: the other subject's and the other company's words
OTHER_MARK = "Wombatkeeper"
OUTSIDE_MARK = "Numbatwatcher"


def store(caller, content, **extra):
    response = caller.client.post(
        "/api/v1/memories", {"content": content, "category": "semantic", **extra}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def flush(caller, conversation_id, subject, mark):
    response = caller.client.post(
        f"/api/v1/conversations/{conversation_id}/messages",
        {
            "subject": subject,
            "messages": [
                {"role": "user", "content": f"My nickname is {mark} and I live in Lisbon."},
                {"role": "assistant", "content": f"Noted, {mark}: you live in Lisbon."},
            ],
        },
        format="json",
    )
    assert response.status_code == 202, response.json()
    assert response.json()["subject"] == subject
    conversation = Conversation.objects.get(agent=caller.agent, external_id=conversation_id)
    run = conversation_extract(conversation=conversation, force=True)  # no LLM: verbatim
    assert run is not None and run.status == ExtractionRun.Status.SUCCEEDED
    return conversation


def report(caller, subject, mark):
    response = caller.client.post(
        "/api/v1/executions",
        {"task_title": f"Help {mark}", "outcome": "succeeded", "subject": subject},
        format="json",
    )
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def stock(caller, peer, subject, mark):
    """What a company holds about one person, through the real write paths."""
    store(caller, f"{mark} prefers tea over coffee.", subject=subject)
    long_id = store(
        caller,
        " ".join(f"{mark} mentioned fact number {n} about their garden." for n in range(120)),
        subject=subject,
    )
    store(peer, f"{mark} asked peer about invoices.", subject=subject)
    published = peer.client.post(
        "/api/v1/shared",
        {"content": f"{mark} is a premium customer.", "category": "social", "subject": subject},
        format="json",
    )
    assert published.status_code == 201, published.json()
    # a correction keeps the replaced text as a revision
    fixed = store(caller, f"{mark} lives in Porto.", subject=subject)
    membership = MembershipFactory(company=caller.company, role="operator")
    memory_correct(
        agent=caller.agent,
        memory_id=fixed,
        content=f"{mark} lives in Lisbon.",
        reason="moved",
        principal=Principal.for_human(membership.user, caller.company, "operator"),
    )
    # one archived
    old = Memory.objects.get(pk=store(caller, f"{mark} once owned a red bicycle.", subject=subject))
    memories_archive_out(
        agent=caller.agent, memories=[old], mode=ArchivalMode.RETENTION, reason="test"
    )
    flush(caller, f"chat-{subject}", subject, mark)
    # the search by subject is logged (the request log names the subject)
    searched = caller.client.post(
        "/api/v1/memories/search", {"query": "tea", "subject": subject}, format="json"
    )
    assert searched.status_code == 200
    report(caller, subject, mark)
    return long_id


def rows_containing(text: str, company=None) -> dict[str, int]:
    """Rows of every model (the apps registry) whose whole row, as text, contains ``text``:
    every column — content, subject, JSON details, arrays, tsvectors — in one look. With
    ``company``: only its rows in tables that carry a company."""
    found = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or not model._meta.managed:
            continue
        table = connection.ops.quote_name(model._meta.db_table)
        sql = f"SELECT count(*) FROM {table} t WHERE position(%s in t::text) > 0"
        params: list = [text]
        columns = {f.column for f in model._meta.concrete_fields}
        if company is not None and "company_id" in columns:
            sql += " AND t.company_id = %s"
            params.append(company.pk)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            count = cursor.fetchone()[0]
        if count:
            found[model._meta.label] = count
    return found


def subject_models() -> list[str]:
    return sorted(
        model._meta.label
        for model in apps.get_models()
        if any(field.name == "subject" for field in model._meta.concrete_fields)
    )


@pytest.fixture
def world(company, caller, peer):
    outside = make_agent_caller(company=CompanyFactory())
    outside_peer = make_agent_caller(company=outside.company)
    stock(caller, peer, SUBJECT, MARK)
    stock(caller, peer, OTHER, OTHER_MARK)
    stock(outside, outside_peer, SUBJECT, OUTSIDE_MARK)  # the same id in another company
    return outside


def test_every_table_holding_a_subject_is_known():
    """A new model with a ``subject`` column must be erased too: this list is the reminder."""
    assert subject_models() == [
        "ingestion.Conversation",
        "memory.ArchivedMemory",
        "memory.Memory",
        "memory.RequestLogEntry",
        "procedural.ExecutionReportSubject",
    ]


def test_erasure_leaves_no_row_naming_the_subject_or_holding_its_text(company, caller, peer, world):
    outside = world
    assert rows_containing(MARK)  # stocked: memories, chunks, revisions, messages, …
    assert MemoryChunk.objects.filter(memory__subject=SUBJECT).exists()
    assert MemoryRevision.objects.filter(memory__subject=SUBJECT).exists()
    assert JournalEntry.objects.filter(company=company, markdown__contains=MARK).exists()
    other_before = rows_containing(OTHER_MARK)
    outside_before = rows_containing(OUTSIDE_MARK)
    outside_subject_before = rows_containing(SUBJECT, company=outside.company)
    admin = make_human_client(company, "admin")

    response = admin.post(
        f"/api/v1/subjects/{SUBJECT}/erase", {"reason": "ticket 7"}, format="json"
    )

    assert response.status_code == 200, response.json()
    receipt = response.json()
    chunks = receipt["counts"]["memory chunks"]
    assert receipt["counts"] == {
        # this subject's: tea, the long one, the corrected one and the two turns extraction
        # stored verbatim (caller), the invoices (peer)
        "memories": 6,
        "memory chunks": chunks,
        "memory revisions": 1,
        "shared knowledge": 1,
        "archived memories": 1,
        "request log entries": 1,
        "journal entries": 1,
        "conversations": 1,
        "conversation messages": 2,
        "extraction runs": 1,
        "extracted facts": 2,
        "execution report subjects": 1,
    }
    assert receipt["counts"]["memory chunks"] >= 1
    assert receipt["total"] == sum(receipt["counts"].values())
    assert receipt["retained"] == ["execution reports"]
    assert receipt["subject"] == SUBJECT
    assert receipt["subject_digest"] == subject_digest(company.pk, SUBJECT)

    # Nothing in this company names the subject or holds its words — in any table.
    assert rows_containing(MARK) == {"procedural.ExecutionReport": 1}  # append-only, unlinked
    assert rows_containing(SUBJECT, company=company) == {}
    # The retained report is attributable to nobody any more.
    kept = ExecutionReport.objects.get(company=company, task_title=f"Help {MARK}")
    assert not ExecutionReportSubject.objects.filter(report=kept).exists()
    # Another subject's data and another company's are untouched.
    assert rows_containing(OTHER_MARK) == other_before
    assert rows_containing(OUTSIDE_MARK) == outside_before
    assert rows_containing(SUBJECT, company=outside.company) == outside_subject_before
    assert Memory.objects.filter(company=outside.company, subject=SUBJECT).count() == 7
    # Audited once, with counts and the digest, never the subject or content.
    entry = AuditEntry.objects.get(company=company, action_type="subject.erased")
    assert entry.target_type == "subject" and entry.target_id == receipt["subject_digest"]
    assert entry.actor_user_id == admin.membership.user_id
    assert receipt["scope"] == "company" and receipt["agent_id"] is None
    assert entry.details == {
        "scope": "company",
        "counts": receipt["counts"],
        "retained": ["execution reports"],
        "via": "api",
        "reason": "ticket 7",
    }
    # Repeating it erases nothing more (and says so).
    again = admin.post(f"/api/v1/subjects/{SUBJECT}/erase")
    assert again.status_code == 200 and again.json()["counts"] == {}
    assert again.json()["total"] == 0


def test_memories_count_exactly(company, caller, peer):
    """The receipt's memory count is exact: the rows of the subject that existed."""
    store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    store(peer, f"{MARK} likes jazz.", subject=SUBJECT)
    store(caller, f"{OTHER_MARK} likes tea.", subject=OTHER)
    store(caller, "The office opens at nine.")
    receipt = subject_erase(company=company, subject=SUBJECT)
    assert receipt.counts == {"memories": 2}
    assert receipt.retained == ("execution reports",)
    assert list(
        Memory.objects.filter(company=company).order_by("content").values_list("subject", flat=True)
    ) == ["", OTHER]  # "The office …", "Wombatkeeper …"


def test_admins_erase_company_wide_operators_never_and_bad_subjects_are_refused(
    company, caller, peer
):
    store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    url = f"/api/v1/subjects/{SUBJECT}/erase"
    operator = make_human_client(company, "operator")
    denied = operator.post(url)
    assert denied.status_code == 403 and denied.json()["code"] == "role_insufficient"
    assert make_human_client(company, "viewer").post(url).status_code == 403
    admin = make_human_client(company, "admin")
    unknown = admin.post(url, {"reason": "x", "force": True}, format="json")
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "force"
    bad = admin.post("/api/v1/subjects/" + "x" * 129 + "/erase")
    assert bad.status_code == 400 and bad.json()["code"] == "subject_invalid"
    assert bad.headers["Content-Type"].startswith("application/problem+json")
    assert Memory.objects.filter(subject=SUBJECT).count() == 1
    assert not AuditEntry.objects.filter(action_type="subject.erased").exists()


def test_an_agent_key_erases_only_what_that_agent_holds(company, caller, peer):
    store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    caller.client.post(
        "/api/v1/shared",
        {"content": f"{MARK} is a premium customer.", "category": "social", "subject": SUBJECT},
        format="json",
    )
    flush(caller, "chat-1", SUBJECT, MARK)
    kept = store(peer, f"{MARK} likes jazz.", subject=SUBJECT)
    flush(peer, "chat-2", SUBJECT, MARK)
    store(caller, f"{OTHER_MARK} likes tea.", subject=OTHER)

    response = caller.client.post(f"/api/v1/subjects/{SUBJECT}/erase")

    assert response.status_code == 200, response.json()
    receipt = response.json()
    assert receipt["scope"] == "agent" and receipt["agent_id"] == caller.agent.pk
    assert receipt["counts"] == {
        "memories": 3,  # tea and the two turns stored verbatim
        "shared knowledge": 1,
        "journal entries": 1,
        "conversations": 1,
        "conversation messages": 2,
        "extraction runs": 1,
        "extracted facts": 2,
    }
    assert not Memory.objects.filter(agent=caller.agent, subject=SUBJECT).exists()
    assert not Conversation.objects.filter(agent=caller.agent, subject=SUBJECT).exists()
    # the peer's rows about the subject and the caller's about another are kept
    assert Memory.objects.filter(agent=peer.agent, subject=SUBJECT).count() == 3
    assert Memory.objects.filter(pk=kept).exists()
    assert Conversation.objects.filter(agent=peer.agent, subject=SUBJECT).count() == 1
    assert Memory.objects.filter(agent=caller.agent, subject=OTHER).count() == 1
    entry = AuditEntry.objects.get(action_type="subject.erased")
    assert entry.actor_agent_id == caller.agent.pk
    assert entry.details["scope"] == "agent" and entry.details["agent_id"] == caller.agent.pk


def test_the_command_erases_and_prints_the_receipt(company, caller, capsys):
    store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    call_command("erase_subject", company.slug, SUBJECT, "--yes", "--reason", "ticket 9")
    out = capsys.readouterr().out
    assert "memories: 1 deleted" in out
    assert "retained (append-only, no longer linked): execution reports" in out
    assert not Memory.objects.filter(subject=SUBJECT).exists()
    entry = AuditEntry.objects.get(action_type="subject.erased")
    assert entry.details["via"] == "command" and entry.details["reason"] == "ticket 9"


@pytest.mark.parametrize(
    "bad", ["", " user", "user ", "a/b", "x" * 129, "bell\u0007", "zw\u200bsp", "line\u2028"]
)
def test_a_malformed_subject_is_refused_on_every_write(caller, bad):
    response = caller.client.post(
        "/api/v1/memories",
        {"content": "Likes tea.", "category": "semantic", "subject": bad},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "field": "subject",
        "message": response.json()["errors"][0]["message"],
        "code": "subject_invalid",
    }
    flushed = caller.client.post(
        "/api/v1/conversations/c1/messages",
        {"subject": bad, "messages": [{"role": "user", "content": "hi"}]},
        format="json",
    )
    assert flushed.status_code == 400 and flushed.json()["errors"][0]["code"] == "subject_invalid"
    reported = caller.client.post(
        "/api/v1/executions", {"outcome": "succeeded", "subject": bad}, format="json"
    )
    assert reported.status_code == 400
    assert reported.json()["errors"][0]["code"] == "subject_invalid"
    if bad:  # an empty filter is no filter, as for every list filter
        listed = caller.client.get("/api/v1/memories", {"subject": bad})
        assert listed.status_code == 400
        assert listed.json()["errors"][0]["code"] == "subject_invalid"
    assert not Memory.objects.exists() and not Conversation.objects.exists()
    assert not ExecutionReport.objects.exists()


def test_list_search_and_context_filter_by_subject(caller):
    tea = store(caller, "Likes green tea in the morning.", subject=SUBJECT)
    store(caller, "Likes black tea in the evening.", subject=OTHER)
    store(caller, "Tea is served in the lobby.")
    listed = caller.client.get("/api/v1/memories", {"subject": SUBJECT}).json()
    assert [m["id"] for m in listed["results"]] == [tea]
    assert listed["results"][0]["subject"] == SUBJECT
    found = caller.client.post(
        "/api/v1/memories/search", {"query": "tea", "subject": SUBJECT}, format="json"
    ).json()
    assert [hit["memory"]["id"] for hit in found["results"]] == [tea]
    everyone = caller.client.post("/api/v1/memories/search", {"query": "tea"}, format="json")
    assert len(everyone.json()["results"]) == 3
    context = caller.client.post(
        "/api/v1/memories/context",
        {"query": "what tea", "token_budget": 800, "subject": SUBJECT, "include_org": False},
        format="json",
    ).json()
    text = json.dumps(context["messages"])
    assert "green tea" in text and "black tea" not in text and "lobby" not in text
    logged = RequestLogEntry.objects.filter(agent=caller.agent).order_by("created_at", "id")
    assert list(logged.values_list("kind", "subject")) == [
        ("search", SUBJECT),
        ("search", ""),
        ("context", SUBJECT),
    ]


def test_the_same_words_about_two_people_are_two_memories(caller):
    """Regression: the write gate took a memory about one person for a duplicate of the
    same words about another (erasing one would then have lost the other's, or kept it)."""
    first = store(caller, "Prefers to be called in the afternoon.", subject=SUBJECT)
    second = caller.client.post(
        "/api/v1/memories",
        {
            "content": "Prefers to be called in the afternoon.",
            "category": "semantic",
            "subject": OTHER,
        },
        format="json",
    )
    assert second.status_code == 201 and second.json()["deduplicated"] is False
    assert second.json()["id"] != first
    twin = caller.client.post(
        "/api/v1/memories",
        {
            "content": "Prefers to be called in the afternoon.",
            "category": "semantic",
            "subject": SUBJECT,
        },
        format="json",
    )
    assert twin.json()["deduplicated"] is True and twin.json()["id"] == first


def test_subject_reads_across_agents_for_operators_own_rows_for_an_agent(company, caller, peer):
    mine = store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    theirs = store(peer, f"{MARK} likes jazz.", subject=SUBJECT)
    store(peer, f"{OTHER_MARK} likes jazz.", subject=OTHER)
    outside = make_agent_caller(company=CompanyFactory())
    store(outside, f"{OUTSIDE_MARK} likes jazz.", subject=SUBJECT)
    url = f"/api/v1/subjects/{SUBJECT}/memories"

    operator = make_human_client(company, "operator").get(url)
    assert operator.status_code == 200
    assert sorted(m["id"] for m in operator.json()["results"]) == sorted([mine, theirs])
    assert {m["agent_id"] for m in operator.json()["results"]} == {
        caller.agent.pk,
        peer.agent.pk,
    }
    own = caller.client.get(url).json()
    assert [m["id"] for m in own["results"]] == [mine]
    viewer = make_human_client(company, "viewer").get(url)
    assert viewer.status_code == 403 and viewer.json()["code"] == "role_insufficient"
    assert [m["id"] for m in outside.client.get(url).json()["results"]] != [mine]
    assert (
        make_human_client(company, "admin")
        .get(f"/api/v1/subjects/{OTHER}/memories")
        .json()["count"]
        == 1
    )
    bad = caller.client.get("/api/v1/subjects/%20x/memories")
    assert bad.status_code == 400 and bad.json()["code"] == "subject_invalid"


def test_extracted_memories_carry_the_conversations_subject(caller):
    conversation = flush(caller, "chat-1", SUBJECT, MARK)
    assert conversation.subject == SUBJECT
    extracted = Memory.objects.filter(agent=caller.agent, source__startswith="extraction:")
    assert extracted.count() == 2
    assert set(extracted.values_list("subject", flat=True)) == {SUBJECT}
    listed = caller.client.get("/api/v1/conversations", {"subject": SUBJECT}).json()
    assert [c["conversation_id"] for c in listed["results"]] == ["chat-1"]
    assert listed["results"][0]["subject"] == SUBJECT


def test_a_conversation_keeps_its_subject(caller):
    url = "/api/v1/conversations/chat-9/messages"
    first = {"subject": SUBJECT, "messages": [{"role": "user", "content": "hello"}]}
    assert caller.client.post(url, first, format="json").status_code == 202
    other = caller.client.post(url, {**first, "subject": OTHER}, format="json")
    assert other.status_code == 409
    assert other.json()["code"] == "conversation_binding_mismatch"
    assert other.json()["errors"][0]["field"] == "subject"
    omitted = caller.client.post(
        url, {"messages": [{"role": "user", "content": "again"}]}, format="json"
    )
    assert omitted.status_code == 202 and omitted.json()["subject"] == SUBJECT
    assert ConversationMessage.objects.filter(conversation__external_id="chat-9").count() == 2


def test_execution_reports_carry_and_filter_by_subject(caller):
    linked = report(caller, SUBJECT, MARK)
    report(caller, OTHER, OTHER_MARK)
    listed = caller.client.get("/api/v1/executions", {"subject": SUBJECT}).json()
    assert [r["id"] for r in listed["results"]] == [linked]
    assert listed["results"][0]["subject"] == SUBJECT


def test_export_by_subject_holds_only_that_subjects_rows(company, caller, peer):
    store(caller, f"{MARK} likes tea.", subject=SUBJECT)
    store(peer, f"{OTHER_MARK} likes tea.", subject=OTHER)
    store(caller, "The office opens at nine.")
    flush(caller, "chat-1", SUBJECT, MARK)
    lines = [json.loads(line) for line in content_export(company=company, subject=SUBJECT)]
    header, rows = lines[0], lines[1:]
    assert header["subject"] == SUBJECT
    assert {row["type"] for row in rows} == {
        "memory",
        "conversation",
        "conversation_message",
        "extraction_run",
    }
    assert all(row.get("subject", SUBJECT) == SUBJECT for row in rows)
    assert OTHER_MARK not in json.dumps(rows) and "nine" not in json.dumps(rows)
    entry = AuditEntry.objects.get(action_type="content.exported")
    assert entry.details["subject_digest"] == subject_digest(company.pk, SUBJECT)
    assert SUBJECT not in json.dumps(entry.details)
    admin = make_human_client(company, "admin")
    response = admin.get("/api/v1/export", {"subject": SUBJECT})
    assert response.status_code == 200
    streamed = b"".join(response.streaming_content).decode()
    assert MARK in streamed and OTHER_MARK not in streamed
    bad = admin.get("/api/v1/export", {"subject": "a/b"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["code"] == "subject_invalid"


def test_a_restored_memory_keeps_its_subject(caller):
    memory = Memory.objects.get(pk=store(caller, f"{MARK} likes tea.", subject=SUBJECT))
    archived = memories_archive_out(
        agent=caller.agent, memories=[memory], mode=ArchivalMode.RETENTION, reason="test"
    ).archived[0]
    assert archived.subject == SUBJECT
    restored = caller.client.post(f"/api/v1/archive/{archived.pk}/restore", format="json")
    assert restored.status_code in (200, 201), restored.json()
    assert Memory.objects.get(agent=caller.agent).subject == SUBJECT


def test_a_subjects_memories_are_never_consolidated(caller):
    """Consolidation merges old memories into a summary; one person's facts never join it
    (the summary would mix them with others' and outlive their erasure)."""
    old = timezone.now() - timedelta(days=400)
    ids = [
        memory_store(
            agent=caller.agent,
            request=MemoryStoreRequest(
                content=f"Fact {n}", category="semantic", subject=subject, created_at=old
            ),
        ).id
        for n, subject in enumerate([SUBJECT, None, OTHER, None])
    ]
    service = MemoryConsolidationService(config=ConsolidationConfig())
    candidates = service.candidates(caller.agent, now=timezone.now())
    assert sorted(m.pk for m in candidates) == sorted([ids[1], ids[3]])
