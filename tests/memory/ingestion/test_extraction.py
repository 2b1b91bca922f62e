"""Extraction through the write gate, against a local OpenAI-compatible HTTP server."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from memory.core.models.maintenance import ArchivedMemory
from memory.core.models.memory import Memory
from memory.ingestion.domain import MessageIn
from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    ExtractedFact,
    ExtractionRun,
    ExtractionRunStatusChange,
    JournalEntry,
)
from memory.ingestion.services.extraction import conversation_extract, conversations_extract_due
from memory.ingestion.services.messages import conversation_messages_append
from memory.ingestion.tasks import extract_conversation
from persistence.models import CostRecord
from persistence.selectors.config import company_config
from tests.memory.factories import MemoryFactory
from tests.memory.ingestion.conftest import configure, fact, flush, llm_settings, reply
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db

BILLING = "Ana said billing deploys move to Fridays at noon UTC."


def live(agent):
    return Memory.objects.filter(agent=agent, superseded_at__isnull=True)


def test_add_stores_memory_with_provenance_journal_and_cost(caller, llm):
    conversation = flush(caller.agent, [BILLING, "Also: Ana leads the billing team."])
    reply(
        llm,
        {
            "facts": [
                fact("Billing deploys every Friday at noon UTC.", tags=["Deploy"]),
                fact("Ana leads the billing team.", category="social", confidence=0.8),
            ]
        },
        prompt_tokens=300,
        completion_tokens=40,
    )
    run = conversation_extract(conversation=conversation, force=True)

    assert run.status == "succeeded"
    assert (run.first_seq, run.last_seq, run.message_count) == (1, 2, 2)
    assert (run.facts_proposed, run.added, run.skipped, run.superseded) == (2, 2, 0, 0)
    assert (run.model, run.input_tokens, run.output_tokens) == ("fake-chat", 300, 40)
    memories = {m.content: m for m in live(caller.agent)}
    assert set(memories) == {
        "Billing deploys every Friday at noon UTC.",
        "Ana leads the billing team.",
    }
    deploy = memories["Billing deploys every Friday at noon UTC."]
    assert (deploy.category, deploy.confidence, deploy.tags) == ("semantic", 0.9, ["deploy"])
    assert deploy.source == f"extraction:{run.pk}"
    assert deploy.embedding_status == "ready"
    message_ids = list(
        ConversationMessage.objects.filter(conversation=conversation)
        .order_by("seq")
        .values_list("pk", flat=True)
    )
    provenance = ExtractedFact.objects.get(memory_id=deploy.pk)
    assert provenance.run_id == run.pk
    assert provenance.run.conversation.external_id == "chat-1"
    assert provenance.message_ids == message_ids
    assert provenance.decision == "added"

    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.pending_tokens) == (2, 0)
    assert conversation.extraction_due_at is None
    assert not ExtractionRun.objects.filter(status__in=["queued", "running"]).exists()

    # one LLM call, with the JSON contract requested as a json_schema
    [request] = llm.requests_to(llm.CHAT_COMPLETIONS)
    body = request.json()
    assert body["model"] == "extract-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["facts"]
    assert BILLING in body["messages"][1]["content"]

    cost = CostRecord.objects.get(agent=caller.agent)
    # 300 × $1/M + 40 × $2/M
    assert (cost.input_tokens, cost.output_tokens, cost.cost) == (300, 40, Decimal("0.00038"))

    entry = JournalEntry.objects.get(agent=caller.agent)
    assert entry.day == run.completed_at.date()
    assert entry.markdown.splitlines()[2:5] == [
        "- learned (semantic, 0.90): Billing deploys every Friday at noon UTC.",
        "- learned (social, 0.80): Ana leads the billing team.",
        "",
    ]


def test_near_duplicate_is_noop_and_counted(caller, llm):
    existing = MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        category="semantic",
        content="Billing deploys every Friday at noon UTC.",
    )
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys every Friday at noon UTC!")]})
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.added, run.skipped) == (0, 1)
    assert list(live(caller.agent)) == [existing]
    assert ExtractedFact.objects.get(run=run).memory_id == existing.pk
    assert ExtractedFact.objects.get(run=run).decision == "noop"


def test_supersede_only_the_agents_own_memories(caller, peer, outsider, llm):
    old = MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        category="semantic",
        content="Billing deploys every Tuesday morning.",
    )
    peers = MemoryFactory(
        agent=peer.agent,
        company=peer.company,
        category="semantic",
        content="Peer's deploy notes for Tuesday.",
    )
    foreign = MemoryFactory(
        agent=outsider.agent,
        company=outsider.company,
        category="semantic",
        content="Another company's Tuesday.",
    )
    conversation = flush(caller.agent, [BILLING])
    reply(
        llm,
        {
            "facts": [
                fact(
                    "Billing deploys every Friday at noon UTC.",
                    supersedes=[old.pk, peers.pk, foreign.pk, "not-a-uuid"],
                )
            ]
        },
    )
    run = conversation_extract(conversation=conversation, force=True)

    assert (run.added, run.superseded, run.ignored_supersedes) == (1, 1, 3)
    new = live(caller.agent).get()
    old.refresh_from_db()
    assert old.superseded_at is not None and old.superseded_by_id == new.pk
    # superseded, not deleted: still there, out of retrieval
    assert Memory.objects.filter(pk=old.pk).exists()
    for other in (peers, foreign):
        other.refresh_from_db()
        assert other.superseded_at is None
    row = ExtractedFact.objects.get(run=run)
    assert row.superseded_ids == [old.pk]
    assert row.ignored_supersedes == [str(peers.pk), str(foreign.pk), "not-a-uuid"]


def test_facts_below_min_confidence_are_dropped(caller, llm):
    configure(caller.company, extraction={"min_confidence": 0.7, "store_turns": False})
    conversation = flush(caller.agent, [BILLING])
    reply(
        llm,
        {
            "facts": [
                fact("Billing deploys on Fridays.", confidence=0.69),
                fact("Ana leads billing.", category="social", confidence=0.7),
            ]
        },
    )
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.facts_proposed, run.added, run.below_confidence) == (2, 1, 1)
    assert [m.content for m in live(caller.agent)] == ["Ana leads billing."]
    assert list(ExtractedFact.objects.filter(run=run).values_list("decision", "memory_id")) == [
        ("below_confidence", None),
        ("added", live(caller.agent).get().pk),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "Sure! Here are the facts: billing on Fridays.",  # not JSON
        '{"facts": [{"content": "x", "category": "gossip", "confidence": 1}]}',  # bad enum
        '{"facts": [{"content": "x", "category": "semantic", "confidence": 3}]}',  # range
        '{"memories": []}',  # wrong shape
    ],
)
def test_invalid_answer_fails_the_run_keeps_messages_and_a_later_run_retries(caller, llm, answer):
    conversation = flush(caller.agent, [BILLING, "second"])
    reply(llm, answer)
    failed = conversation_extract(conversation=conversation, force=True)
    assert failed.status == "failed"
    assert failed.reason.startswith("the answer")
    # meanwhile the turns are memories (verbatim); the range stays pending for the LLM
    assert sorted(live(caller.agent).values_list("content", "tags")) == [
        (BILLING, ["verbatim", "speaker:user"]),
        ("second", ["verbatim", "speaker:user"]),
    ]
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (0, 2)
    # by design (durable job): the run itself is due again after the back-off
    assert failed.attempts == 1
    assert failed.next_attempt_at > failed.updated_at  # backoff
    assert ConversationMessage.objects.filter(conversation=conversation).count() == 2

    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    later = timezone.now() + timedelta(hours=2)
    assert conversations_extract_due(now=later) == 1
    # by design: the retry is the same run, its second attempt
    retry = ExtractionRun.objects.get(method="llm")
    assert (retry.pk, retry.status, retry.attempts, retry.first_seq, retry.last_seq) == (
        failed.pk,
        "succeeded",
        2,
        1,
        2,
    )
    assert sorted(live(caller.agent).values_list("content", flat=True)) == [
        BILLING,
        "Billing deploys on Fridays.",
        "second",
    ]


def test_llm_error_fails_the_run(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    llm.enqueue(llm.CHAT_COMPLETIONS, ScriptedResponse(status=503, json=error_payload("down")))
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "failed"
    assert "503" in run.reason
    assert ConversationMessage.objects.filter(conversation=conversation).count() == 1


def test_an_outage_stores_the_turns_verbatim_meanwhile_and_the_llm_adds_facts_on_top(caller, llm):
    """Regression: during an LLM outage a flushed conversation was no memory at all until
    the LLM answered again (the failed run stored nothing)."""
    down = ScriptedResponse(status=503, json=error_payload("down"))
    conversation = flush(
        caller.agent,
        ["Can you deploy billing today?", "Staging uses the eu-1 cluster."],
        role="user",
    )
    llm.enqueue(llm.CHAT_COMPLETIONS, down)
    failed = conversation_extract(conversation=conversation, force=True)
    assert (failed.status, failed.method, failed.trigger) == ("failed", "llm", "manual")
    assert "503" in failed.reason
    meanwhile = ExtractionRun.objects.get(trigger="llm_failed")
    assert (meanwhile.status, meanwhile.method, meanwhile.first_seq, meanwhile.last_seq) == (
        "succeeded",
        "verbatim",
        1,
        2,
    )
    assert (meanwhile.facts_proposed, meanwhile.added, meanwhile.skipped) == (2, 2, 0)
    verbatim = {m.content: m for m in live(caller.agent)}
    assert set(verbatim) == {"Can you deploy billing today?", "Staging uses the eu-1 cluster."}
    assert {(m.category, tuple(m.tags), m.source) for m in verbatim.values()} == {
        ("episodic", ("verbatim", "speaker:user"), f"extraction:{meanwhile.pk}")
    }
    assert list(
        ExtractedFact.objects.filter(run=meanwhile).values_list("memory_id", flat=True)
    ) == [
        verbatim["Can you deploy billing today?"].pk,
        verbatim["Staging uses the eu-1 cluster."].pk,
    ]
    assert JournalEntry.objects.filter(agent=caller.agent).count() == 1
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (0, 2)
    assert failed.attempts == 1
    assert failed.next_attempt_at > failed.updated_at  # the LLM retry is due later

    # the retry fails too: the turns are not stored a second time
    llm.enqueue(llm.CHAT_COMPLETIONS, down)
    assert conversations_extract_due(now=timezone.now() + timedelta(hours=2)) == 1
    # by design: the same run failed its second attempt
    assert ExtractionRun.objects.get(status="failed").attempts == 2
    assert ExtractionRun.objects.filter(trigger="llm_failed").count() == 1
    assert live(caller.agent).count() == 2

    # more messages arrive, the LLM is still down: only the new turn is stored verbatim
    conversation_messages_append(
        agent=caller.agent,
        conversation_id="chat-1",
        messages=[MessageIn(role="assistant", content="Deploying billing to eu-1 now.")],
    )
    llm.enqueue(llm.CHAT_COMPLETIONS, down)
    conversation_extract(conversation=Conversation.objects.get(pk=conversation.pk), force=True)
    latest = ExtractionRun.objects.filter(trigger="llm_failed").order_by("-last_seq").first()
    assert (latest.first_seq, latest.last_seq, latest.added) == (3, 3, 1)

    # the LLM answers: its facts are added on top, the verbatim memories stay
    reply(llm, {"facts": [fact("Staging runs on the eu-1 cluster.")]})
    recovered = conversation_extract(
        conversation=Conversation.objects.get(pk=conversation.pk), force=True
    )
    assert (recovered.status, recovered.method, recovered.first_seq, recovered.last_seq) == (
        "succeeded",
        "llm",
        1,
        3,
    )
    assert recovered.added == 1
    assert sorted(live(caller.agent).values_list("content", flat=True)) == [
        "Can you deploy billing today?",
        "Deploying billing to eu-1 now.",
        "Staging runs on the eu-1 cluster.",
        "Staging uses the eu-1 cluster.",
    ]
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (3, 3)
    assert (recovered.pk, recovered.attempts, conversation.extraction_due_at) == (
        failed.pk,
        4,
        None,
    )


def test_by_default_the_turns_are_stored_first_and_the_llms_facts_on_top(caller, llm):
    """``store_turns`` (the default): the turns are remembered whatever the LLM does, and the
    LLM is shown what was already known — never the turns it is extracting from."""
    configure(caller.company, extraction={})  # the defaults (the fixture keeps facts only)
    reply(llm, {"facts": [fact("Staging runs on the eu-1 cluster.")]})
    conversation = flush(
        caller.agent,
        ["Can you deploy billing today?", "Staging uses the eu-1 cluster."],
        role="user",
    )
    run = conversation_extract(conversation=conversation, force=True)

    assert (run.status, run.method, run.first_seq, run.last_seq, run.added) == (
        "succeeded",
        "llm",
        1,
        2,
        1,
    )
    turns = ExtractionRun.objects.get(trigger="turns")
    assert (turns.status, turns.method, turns.first_seq, turns.last_seq, turns.added) == (
        "succeeded",
        "verbatim",
        1,
        2,
        2,
    )
    memories = {m.content: (m.category, tuple(m.tags), m.source) for m in live(caller.agent)}
    said = ("verbatim", "speaker:user")
    assert memories == {
        "Can you deploy billing today?": ("episodic", said, f"extraction:{turns.pk}"),
        "Staging uses the eu-1 cluster.": ("episodic", said, f"extraction:{turns.pk}"),
        "Staging runs on the eu-1 cluster.": ("semantic", (), f"extraction:{run.pk}"),
    }
    (request,) = llm.requests_to(llm.CHAT_COMPLETIONS)
    prompt = request.json()["messages"][1]["content"]
    known = prompt.split("<memories>", 1)[1].split("</memories>", 1)[0]
    assert known.strip() == "(none)"  # the stored turns are not "already known" facts
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.verbatim_through_seq) == (2, 2)

    # the next run stores only the new turn
    conversation_messages_append(
        agent=caller.agent,
        conversation_id="chat-1",
        messages=[MessageIn(role="assistant", content="Deploying billing to eu-1 now.")],
    )
    reply(llm, {"facts": []})
    conversation_extract(conversation=Conversation.objects.get(pk=conversation.pk), force=True)
    latest = ExtractionRun.objects.filter(trigger="turns").order_by("-last_seq").first()
    assert (latest.first_seq, latest.last_seq, latest.added) == (3, 3, 1)
    assert live(caller.agent).count() == 4


def test_structured_output_refused_is_asked_again_without_it(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    llm.enqueue(
        llm.CHAT_COMPLETIONS,
        ScriptedResponse(status=400, json=error_payload("response_format unsupported")),
    )
    reply(
        llm,
        '```json\n{"facts": [{"content": "Billing deploys on Fridays.", '
        '"category": "semantic", "confidence": 0.9}]}\n```',
    )
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "succeeded" and run.added == 1
    first, second = llm.requests_to(llm.CHAT_COMPLETIONS)
    assert first.json()["response_format"]["type"] == "json_schema"
    # the next format a server may still honour (synthorg.llm.structured.fallback_formats)
    assert second.json()["response_format"]["type"] == "json_object"


def test_without_llm_the_turns_become_verbatim_memories(caller, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    agent = caller.agent
    conversation_messages_append(
        agent=agent,
        conversation_id="chat-1",
        messages=[
            MessageIn(role="system", content="You are a helpful assistant."),
            MessageIn(role="user", content=BILLING),
            MessageIn(
                role="assistant", content="Noted: billing deploys on Fridays at noon.", name="Bot"
            ),
            MessageIn(role="user", content="x" * 400),
            MessageIn(role="user", content="And Ana leads the billing team."),
        ],
    )
    conversation = Conversation.objects.get(agent=agent, external_id="chat-1")
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.status, run.method, run.added, run.skipped) == ("succeeded", "verbatim", 4, 0)
    memories = list(
        Memory.objects.filter(agent=agent)
        .order_by("created_at", "content")
        .values_list("content", "context", "category", "tags", "source")
    )
    source = f"extraction:{run.pk}"
    assert sorted(memories) == sorted(
        [
            # each turn says who spoke it: role, and name when it has one (speaker feature)
            (BILLING, "", "episodic", ["verbatim", "speaker:user"], source),
            (
                "Noted: billing deploys on Fridays at noon.",
                f"In reply to user: {BILLING}",
                "episodic",
                ["verbatim", "speaker:assistant", "speaker:bot"],
                source,
            ),
            (
                "x" * 400,
                "In reply to Bot: Noted: billing deploys on Fridays at noon.",
                "episodic",
                ["verbatim", "speaker:user"],
                source,
            ),
            (
                "And Ana leads the billing team.",
                "",
                "episodic",
                ["verbatim", "speaker:user"],
                source,
            ),
        ]
    )
    facts = list(ExtractedFact.objects.filter(run=run).order_by("position"))
    messages = dict(
        ConversationMessage.objects.filter(conversation=conversation).values_list("seq", "pk")
    )
    assert [f.message_ids for f in facts] == [
        [messages[2]],
        [messages[3]],
        [messages[4]],
        [messages[5]],
    ]
    conversation.refresh_from_db()
    assert (conversation.extracted_through_seq, conversation.extraction_due_at) == (5, None)
    assert JournalEntry.objects.filter(run=run).exists()
    # nothing pending: the sweep has nothing to do
    assert conversations_extract_due(now=timezone.now() + timedelta(hours=1)) == 0


def test_verbatim_context_is_bounded_and_turns_go_through_the_gate(caller, settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    long_question = "why " * 200
    conversation_messages_append(
        agent=caller.agent,
        conversation_id="chat-2",
        messages=[
            MessageIn(role="user", content=long_question),
            MessageIn(role="assistant", content="Because billing moved to Fridays."),
        ],
    )
    conversation = Conversation.objects.get(agent=caller.agent, external_id="chat-2")
    conversations_extract_due(now=timezone.now() + timedelta(hours=1))
    answer = Memory.objects.get(content="Because billing moved to Fridays.")
    assert answer.context == "In reply to user: " + ("why " * 200).strip()[:299].rstrip() + "…"
    # a repeated turn is a near duplicate: the gate stores it once
    flush(
        caller.agent, ["Because billing moved to Fridays."], conversation="chat-2", role="assistant"
    )
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.method, run.added, run.skipped) == ("verbatim", 0, 1)


def test_with_an_llm_runs_record_method_llm(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    run = conversation_extract(conversation=conversation, force=True)
    assert (run.status, run.method, run.added) == ("succeeded", "llm", 1)
    assert not Memory.objects.filter(tags__contains=["verbatim"]).exists()


def test_a_burst_of_twenty_flushes_makes_one_extraction(caller, llm):
    for i in range(20):
        conversation = flush(caller.agent, [f"burst message number {i} about billing"])
    # the debounce has not elapsed: the task fires and does nothing
    assert extract_conversation(conversation.pk) is None
    assert llm.requests_to(llm.CHAT_COMPLETIONS) == []
    reply(llm, {"facts": [fact("Billing was discussed in a burst.")]})
    after_quiet = conversation.extraction_due_at + timedelta(seconds=1)
    run = conversation_extract(conversation=conversation, now=after_quiet)
    assert (run.trigger, run.first_seq, run.last_seq) == ("debounce", 1, 20)
    assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == 1
    # nothing left: neither the task nor the sweep runs again
    assert extract_conversation(conversation.pk) is None
    assert conversations_extract_due(now=after_quiet + timedelta(hours=1)) == 0
    assert ExtractionRun.objects.count() == 1


def test_pending_tokens_over_the_limit_make_it_due_at_once(caller, llm):
    configure(caller.company, extraction={"max_pending_tokens": 50})
    conversation = flush(caller.agent, ["x" * 100])
    assert conversation.extraction_due_at > timezone.now()  # 25 tokens: debounced
    conversation = flush(caller.agent, ["y" * 120])
    assert conversation.pending_tokens == 55
    assert conversation.extraction_due_at <= timezone.now()
    run = conversation_extract(conversation=conversation)
    assert (run.trigger, run.first_seq, run.last_seq) == ("pending_tokens", 1, 2)


def test_batches_are_capped_and_the_rest_stays_due(caller, llm):
    configure(caller.company, extraction={"max_batch_tokens": 100})
    conversation = flush(caller.agent, ["a" * 240, "b" * 240, "c" * 240])  # 60 tokens each
    first = conversation_extract(conversation=conversation, force=True)
    assert (first.first_seq, first.last_seq) == (1, 1)
    conversation.refresh_from_db()
    assert conversation.extraction_due_at is not None
    assert conversation.pending_tokens == 120
    second = conversation_extract(conversation=conversation, force=True)
    assert (second.first_seq, second.last_seq) == (2, 2)


def test_extraction_disabled_stores_messages_without_runs(caller, llm):
    configure(caller.company, extraction={"enabled": False})
    conversation = flush(caller.agent, [BILLING])
    assert conversation.extraction_due_at is None
    assert conversation_extract(conversation=conversation, force=True) is None
    assert not ExtractionRun.objects.exists()


def test_relevant_memories_are_the_agents_own(caller, peer, llm):
    mine = MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        category="semantic",
        content="Billing deploys used to be on Tuesdays.",
    )
    MemoryFactory(
        agent=peer.agent,
        company=peer.company,
        category="semantic",
        content="Billing deploys secret of the peer agent.",
    )
    conversation = flush(caller.agent, [BILLING])
    conversation_extract(conversation=conversation, force=True)
    prompt = llm.requests_to(llm.CHAT_COMPLETIONS)[0].json()["messages"][1]["content"]
    assert f"id={mine.pk}" in prompt
    assert "secret of the peer" not in prompt


def test_growth_is_bounded_through_the_archive(caller, llm):
    configure(
        caller.company, options={"max_memories_per_agent": 2}, extraction={"store_turns": False}
    )
    weak = MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        confidence=0.2,
        category="semantic",
        content="Weak hunch about tax rules.",
    )
    MemoryFactory(
        agent=caller.agent,
        company=caller.company,
        confidence=0.9,
        category="semantic",
        content="Strong fact about payroll.",
    )
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys on Fridays.", confidence=0.8)]})
    conversation_extract(conversation=conversation, force=True)
    assert sorted(m.content for m in Memory.objects.filter(agent=caller.agent)) == [
        "Billing deploys on Fridays.",
        "Strong fact about payroll.",
    ]
    archived = ArchivedMemory.objects.get(agent=caller.agent)
    assert (archived.original_id, archived.content) == (weak.pk, "Weak hunch about tax rules.")
    restored = caller.client.post(f"/api/v1/archive/{archived.pk}/restore")
    assert restored.status_code in (200, 201)


def test_extractions_endpoint_lists_runs_with_counts(caller, outsider, llm):
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    run = conversation_extract(conversation=conversation, force=True)
    response = caller.client.get("/api/v1/conversations/chat-1/extractions")
    assert response.status_code == 200
    [listed] = response.json()["results"]
    assert listed["id"] == str(run.pk)
    assert {
        k: listed[k]
        for k in (
            "status",
            "trigger",
            "first_seq",
            "last_seq",
            "added",
            "skipped",
            "superseded",
            "below_confidence",
        )
    } == {
        "status": "succeeded",
        "trigger": "manual",
        "first_seq": 1,
        "last_seq": 1,
        "added": 1,
        "skipped": 0,
        "superseded": 0,
        "below_confidence": 0,
    }
    detail = caller.client.get(f"/api/v1/conversations/chat-1/extractions/{run.pk}").json()
    assert detail["facts"][0]["decision"] == "added"
    assert detail["facts"][0]["message_ids"] == [
        ConversationMessage.objects.get(conversation=conversation).pk
    ]
    missing = outsider.client.get(f"/api/v1/conversations/chat-1/extractions/{run.pk}")
    assert missing.status_code == 404


def test_conversation_purged_while_extracting_is_not_an_error(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    Conversation.objects.filter(pk=conversation.pk).delete()
    assert extract_conversation(conversation.pk) is None


def test_only_the_base_url_is_needed_the_model_is_discovered(caller, settings, llm):
    settings.SYNTHORG_LLM = {**llm_settings(llm), "MODEL": ""}
    llm.models = ["served-model", "other"]
    conversation = flush(caller.agent, [BILLING])
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "succeeded"
    assert llm.requests_to(llm.MODELS)[0].method == "GET"
    assert llm.requests_to(llm.CHAT_COMPLETIONS)[0].json()["model"] == "served-model"


def test_claim_with_an_expired_lease_is_taken_over(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    now = timezone.now()
    stale = ExtractionRun.objects.create(
        company=caller.company,
        agent=caller.agent,
        conversation=conversation,
        trigger="debounce",
        first_seq=1,
        last_seq=1,
        message_count=1,
        created_at=now,
        # a worker holds it under a lease (by design: the run's own, the kernel's)
        status="running",
        attempts=1,
        claimed_until=now + timedelta(minutes=5),
        updated_at=now,
    )
    assert conversation_extract(conversation=conversation, force=True, now=now) is None
    assert llm.requests_to(llm.CHAT_COMPLETIONS) == []
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    later = now + timedelta(minutes=6)
    run = conversation_extract(conversation=conversation, force=True, now=later)
    assert run.status == "succeeded" and (run.first_seq, run.last_seq) == (1, 1)
    # by design: the dead worker's run is reclaimed and runs again (its second attempt)
    assert (run.pk, run.attempts) == (stale.pk, 2)
    assert list(
        ExtractionRunStatusChange.objects.filter(run_id=stale.pk).values_list("status", flat=True)
    ) == ["queued", "running", "succeeded"]


def test_extracted_memories_share_the_conversations_session_binding(company, llm):
    from tests.conftest import make_agent_caller

    agent = make_agent_caller(company=company, memory_level="session")
    conversation = flush(agent.agent, [BILLING], session_id="run-7")
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    run = conversation_extract(conversation=conversation, force=True)
    memory = Memory.objects.get(agent=agent.agent)
    assert (run.added, memory.level, memory.session_id) == (1, "session", "run-7")
    assert agent.client.post("/api/v1/sessions/run-7/end").status_code == 200
    assert not Memory.objects.filter(agent=agent.agent).exists()
    assert not Conversation.objects.filter(agent=agent.agent).exists()
    assert not ExtractionRun.objects.filter(agent=agent.agent).exists()


def test_an_agent_switched_to_level_none_is_not_extracted(caller, llm):
    conversation = flush(caller.agent, [BILLING])
    caller.agent.memory_level = "none"
    caller.agent.save()
    assert conversation_extract(conversation=conversation, force=True) is None
    conversation.refresh_from_db()
    assert conversation.extraction_due_at is None
    assert llm.requests_to(llm.CHAT_COMPLETIONS) == []
    assert ConversationMessage.objects.filter(conversation=conversation).count() == 1


def test_the_range_of_a_killed_worker_is_taken_over_once_its_short_lease_passes(caller, llm):
    """kill -9 of the worker extracting a range right after its claim: nobody renews the
    claim's lease (the kernel's 20 s job lease, kept alive only by a live worker), so a run
    21 s later takes the range over — not one after the LLM client's 150 s."""
    from memory.ingestion.services.extraction import EXTRACTION_JOB, extraction_queue
    from synthorg.jobs.services import job_claim

    conversation = flush(caller.agent, [BILLING])
    now = timezone.now()
    config = company_config(caller.company).memory.extraction
    queued = extraction_queue(conversation, force=True, now=now, config=config)
    dead = job_claim(EXTRACTION_JOB, queued.pk, now=now)
    assert dead is not None  # … and its worker is killed

    early = now + timedelta(seconds=19)
    assert conversation_extract(conversation=conversation, force=True, now=early) is None
    reply(llm, {"facts": [fact("Billing deploys on Fridays.")]})
    later = now + timedelta(seconds=21)
    run = conversation_extract(conversation=conversation, force=True, now=later)

    assert run.status == "succeeded" and (run.first_seq, run.last_seq) == (1, 1)
    # by design: the killed worker's run itself is reclaimed and runs again
    assert (run.pk, run.attempts) == (dead.pk, 2)
    assert ExtractionRunStatusChange.objects.filter(
        run_id=dead.pk, reason__startswith="reclaimed"
    ).exists()
    conversation.refresh_from_db()
    assert conversation.extracted_through_seq == 1
