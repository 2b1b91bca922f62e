"""``MemoryEngine`` (seed 004's facade): one in-process object whose calls go through
``MemoryService`` — the same rows, audit, request log, errors and rate limits as REST."""

import pytest

from memory.core.models import Memory, RequestLogEntry
from memory.core.retrieval.filtering import TAG_MISSING
from memory.ingestion.models import Conversation, ConversationMessage, DreamRequest
from memory.interfaces.engine import MemoryEngine
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from synthorg.errors import InvalidInputError, RateLimitedError

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine(caller):
    return MemoryEngine(caller.agent)


def test_manage_create_update_delete_through_the_service(engine, caller):
    created = engine.manage("Billing deploys every Friday at noon UTC.", tags=["deploy"])
    assert (created.stored, created.deduplicated, created.embedding_status) == (
        True,
        False,
        "ready",
    )
    memory = Memory.objects.get(pk=created.id)
    assert (memory.agent_id, memory.category, memory.tags) == (
        caller.agent.pk,
        "semantic",
        ["deploy"],
    )
    # the write gate is the same: a near duplicate is not stored twice
    again = engine.manage("Billing deploys every Friday at noon UTC.")
    assert (again.id, again.deduplicated) == (created.id, True)

    changed = engine.manage("Billing deploys every Thursday.", action="update", id=created.id)
    assert changed.content == "Billing deploys every Thursday."
    assert Memory.objects.get(pk=created.id).category == "semantic"  # unchanged

    assert engine.manage(action="delete", id=created.id) is None
    assert not Memory.objects.filter(pk=created.id).exists()
    deleted = AuditEntry.objects.get(action_type="memory.deleted")
    assert deleted.actor_agent_id == caller.agent.pk


def test_manage_refusals(engine):
    with pytest.raises(InvalidInputError) as no_id:
        engine.manage("x", action="update")
    assert no_id.value.code == "id_required"
    with pytest.raises(InvalidInputError) as unknown:
        engine.manage("x", action="merge")
    assert unknown.value.code == "unknown_action"
    with pytest.raises(InvalidInputError) as blank:
        engine.manage("   ")
    assert blank.value.code == "validation_error"
    assert not Memory.objects.exists()


def test_manage_create_carries_the_advisory_warning(engine, caller):
    company_config_set(
        company=caller.company, data={"memory": {"retrieval": {"non_inferable_only": True}}}
    )
    engine = MemoryEngine(caller.agent)  # config read once per engine, like a request
    result = engine.manage("We chose Postgres over Mongo.")
    assert result.warnings == ({"code": "non_inferable_tag_missing", "message": TAG_MISSING},)


def test_search_and_format_for_injection_are_logged_via_engine(engine):
    stored = engine.manage("The billing service deploys every Friday at noon UTC.")
    result = engine.search("when does billing deploy?")
    assert [hit.memory.pk for hit in result.hits] == [stored.id]
    text = engine.format_for_injection("prepare the billing deploy", max_tokens=500)
    assert "The billing service deploys every Friday at noon UTC." in text
    assert "<memory-entry" in text
    assert engine.format_for_injection("prepare the billing deploy", max_tokens=0) == ""
    assert list(RequestLogEntry.objects.order_by("created_at").values_list("kind", "via")) == [
        ("search", "engine"),
        ("context", "engine"),
        ("context", "engine"),
    ]


def test_flush_appends_messages_of_a_conversation(engine, caller):
    result = engine.flush(
        [
            {"role": "user", "content": "Ana leads billing now."},
            {"role": "assistant", "content": "Noted."},
        ],
        conversation_id="chat-7",
    )
    assert (result.conversation_id, result.stored, result.accepted) == ("chat-7", True, 2)
    conversation = Conversation.objects.get(agent=caller.agent, external_id="chat-7")
    assert list(
        ConversationMessage.objects.filter(conversation=conversation)
        .order_by("seq")
        .values_list("role", "content")
    ) == [("user", "Ana leads billing now."), ("assistant", "Noted.")]
    with pytest.raises(InvalidInputError) as bad:
        engine.flush([{"role": "robot", "content": "hi"}])
    assert bad.value.errors[0]["field"] == "[0].role"


def test_dream_is_the_rate_limited_request(engine, caller, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    request = engine.dream()
    assert (request.status, request.method, request.via) == ("queued", "extractive", "engine")
    with pytest.raises(RateLimitedError) as limited:
        engine.dream()
    assert limited.value.code == "dream_rate_limited"
    assert DreamRequest.objects.count() == 1


def test_tuple_namespaces_through_the_engine(engine, caller):
    mine = ("org", caller.company.slug, caller.agent.name)
    stored = engine.manage("Billing deploys on Fridays.", namespace=mine)
    engine.manage("Billing deploys were on Mondays.", namespace="history")
    assert Memory.objects.get(pk=stored.id).namespace == "/".join(mine)
    assert [hit.memory.pk for hit in engine.search("billing deploys", namespaces=[mine]).hits] == [
        stored.id
    ]
    with pytest.raises(InvalidInputError) as refused:
        engine.manage("x", namespace=("user",))
    assert refused.value.code == "namespace_arity"
