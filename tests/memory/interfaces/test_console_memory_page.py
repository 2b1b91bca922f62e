"""A memory's console page: provenance (source, confidence, embedding, the report or the
conversation it came from), correction history from the audit, delete behind a confirmation
step, form errors on top."""

import pytest
from django.test import Client
from django.utils import timezone

from memory.core.domain import MemoryStoreRequest
from memory.core.models.memory import Memory
from memory.core.services.edit import memory_correct
from memory.core.services.store import memory_store
from memory.ingestion.domain import MessageIn
from memory.ingestion.models import Conversation, ExtractedFact, ExtractionRun
from memory.ingestion.services.messages import conversation_messages_append
from memory.procedural.models import ProceduralLesson
from memory.procedural.services.reports import execution_report_submit
from memory.procedural.tasks import capture_execution_report
from persistence.models import AuditEntry
from persistence.principal import Principal
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def _client(company, role):
    membership = MembershipFactory(company=company, role=role, user__password=None)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


@pytest.fixture
def agent(company):
    return AgentFactory(company=company, name="billing-bot")


def _store(agent, content, **fields):
    result = memory_store(
        agent=agent, request=MemoryStoreRequest(content=content, category="semantic", **fields)
    )
    return Memory.objects.get(pk=result.id)


def _url(memory, suffix=""):
    return f"/console/memories/agents/{memory.agent_id}/{memory.pk}{suffix}"


def test_provenance_of_a_stored_memory(company, agent):
    memory = _store(agent, "Invoices go out on the 1st.", source="billing-wiki", confidence=0.8)
    html = _client(company, "viewer").get(_url(memory)).content.decode()
    provenance = html[html.index('id="provenance"') :]
    assert "<dt>Source</dt><dd>billing-wiki</dd>" in provenance
    assert "<dt>Confidence</dt><dd>0.80</dd>" in provenance
    assert (
        f'<dd id="embedding">{memory.get_embedding_status_display()} · {memory.embedder_id}</dd>'
        in provenance
    )


def test_provenance_links_the_lesson_to_its_execution_report(company, agent):
    report = execution_report_submit(agent=agent, data=FAILED_REPORT, enqueue=False).report
    capture_execution_report(str(report.pk))  # no LLM configured: the rule-based lesson
    lesson = ProceduralLesson.objects.get(report=report)
    html = _client(company, "viewer").get(_url(lesson.memory)).content.decode()
    assert f'id="report-link" href="/console/memories/executions/{report.pk}"' in html
    assert f"{lesson.skill_name} (Failure, method rule)" in html


def test_provenance_names_the_conversation_an_extracted_memory_came_from(company, agent):
    conversation_messages_append(
        agent=agent, conversation_id="chat-42", messages=[MessageIn(role="user", content="hi")]
    )
    conversation = Conversation.objects.get(agent=agent, external_id="chat-42")
    memory = _store(agent, "The user greets first.")
    run = ExtractionRun.objects.create(
        company=company,
        agent=agent,
        conversation=conversation,
        trigger="manual",
        first_seq=1,
        last_seq=1,
        message_count=1,
        status="succeeded",
        created_at=timezone.now(),
        updated_at=timezone.now(),  # a durable job's (by design)
    )
    ExtractedFact.objects.create(
        run=run,
        position=0,
        content=memory.content,
        category="semantic",
        confidence=0.9,
        decision="added",
        memory_id=memory.pk,
    )
    viewer = _client(company, "viewer")
    html = viewer.get(_url(memory)).content.decode()
    assert '<dd class="conversation">chat-42 · turns 1–1 · Manual · Added</dd>' in html
    staff = _client(company, "viewer")
    staff.membership.user.is_staff = True
    staff.membership.user.save()
    linked = staff.get(_url(memory)).content.decode()
    assert f'href="/admin/ingestion/conversation/{conversation.pk}/change/">chat-42</a>' in linked


def test_correction_history_lists_each_correction_from_the_audit(company, agent):
    memory = _store(agent, "Billing deploys every Friday.")
    operator = _client(company, "operator")
    principal = Principal.for_human(operator.membership.user, company, "operator")
    memory_correct(
        agent=agent, memory_id=memory.pk, content="… Thursday.", reason="moved", principal=principal
    )
    memory_correct(
        agent=agent,
        memory_id=memory.pk,
        content="… Wednesday.",
        reason="moved again",
        principal=principal,
    )
    html = operator.get(_url(memory)).content.decode()
    rows = html.split('class="correction-row"')[1:]
    assert len(rows) == 2
    assert "<td>moved</td>" in rows[0] and "<td>moved again</td>" in rows[1]
    assert f"<td>{operator.membership.user.get_username()}</td>" in rows[0]
    entries = AuditEntry.objects.filter(action_type="memory.corrected").order_by("created_at", "id")
    assert entries[0].details["previous_content_sha256"][:12] in rows[0]
    # the replaced texts, each in its row
    assert '<span class="replaced-text">Billing deploys every Friday.</span>' in rows[0]
    assert '<span class="replaced-text">… Thursday.</span>' in rows[1]


@pytest.mark.django_db(transaction=True)
def test_replaced_texts_are_kept_beside_the_memory_and_erased_with_it(company, agent):
    """The audit outlives an erasure and holds only a digest; the replaced text is a
    revision row that is never updated and goes with its memory."""
    from django.db import DatabaseError, connection, transaction

    from memory.core.models import MemoryRevision
    from persistence.services.erasure import agent_erase

    memory = _store(agent, "The vault code is 4411.")
    operator = _client(company, "operator")
    principal = Principal.for_human(operator.membership.user, company, "operator")
    memory_correct(
        agent=agent, memory_id=memory.pk, content="The vault code was rotated.",
        reason="secret in memory", principal=principal,
    )  # fmt: skip
    entry = AuditEntry.objects.get(action_type="memory.corrected")
    revision = MemoryRevision.objects.get()
    assert (revision.memory_id, revision.company_id, revision.audit_entry_id) == (
        memory.pk, company.pk, entry.pk,
    )  # fmt: skip
    assert revision.previous_content == "The vault code is 4411."
    assert "4411" not in str(entry.details)
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE memory_memoryrevision SET previous_content = 'x'")

    agent_erase(agent=agent, reason="leaving")
    assert not MemoryRevision.objects.exists()
    assert AuditEntry.objects.filter(pk=entry.pk).exists()  # the audit stays, text-free


def test_delete_asks_for_confirmation_first(company, agent):
    memory = _store(agent, "The CEO's home address is 12 Elm Street.")
    operator = _client(company, "operator")
    detail = operator.get(_url(memory)).content.decode()
    assert f'id="delete-link" href="{_url(memory, "/delete")}"' in detail
    assert 'name="reason"' not in detail.split('id="delete-link"')[1]
    confirm = operator.get(_url(memory, "/delete"))
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert 'id="confirm-delete"' in html and "12 Elm Street" in html
    assert Memory.objects.filter(pk=memory.pk).exists()  # asking deletes nothing
    refused = operator.post(_url(memory, "/delete"), {"reason": ""})
    assert refused.status_code == 400
    body = refused.content.decode()
    assert body.index('id="form-errors"') < body.index('id="memory-content"')
    assert "A reason is required" in body
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert operator.post(_url(memory, "/delete"), {"reason": "personal data"}).status_code == 302
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert AuditEntry.objects.filter(action_type="memory.deleted").count() == 1


def test_viewer_gets_no_confirmation_page_and_outsiders_404(company, agent):
    memory = _store(agent, "Keep me.")
    assert _client(company, "viewer").get(_url(memory, "/delete")).status_code == 403
    assert _client(CompanyFactory(), "owner").get(_url(memory, "/delete")).status_code == 404
    assert _client(CompanyFactory(), "owner").get(_url(memory)).status_code == 404
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_a_refused_correction_shows_its_error_above_the_memory(company, agent):
    memory = _store(agent, "Billing deploys every Friday.")
    response = _client(company, "admin").post(
        _url(memory, "/correct"), {"content": "Billing deploys Thursday.", "reason": " "}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert html.index('id="form-errors"') < html.index('id="memory-content"')
    memory.refresh_from_db()
    assert memory.content == "Billing deploys every Friday."
    assert not AuditEntry.objects.filter(action_type="memory.corrected").exists()
