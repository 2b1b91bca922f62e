"""Reads of conversation ingestion, always scoped to one agent (and so to one company)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db.models import QuerySet
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError
from memory.core.models import Memory
from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    DreamRequest,
    DreamRun,
    ExtractedFact,
    ExtractionRun,
    JournalEntry,
)
from persistence.models import Agent

CONVERSATION_NOT_FOUND = "No conversation with this id exists for the calling agent."
RUN_NOT_FOUND = "No extraction run with this id exists in this conversation."


def conversation_get(*, agent: Agent, conversation_id: str) -> Conversation:
    conversation = Conversation.objects.filter(agent=agent, external_id=conversation_id).first()
    if conversation is None:
        raise MemoryNotFoundError(CONVERSATION_NOT_FOUND, code="conversation_not_found")
    return conversation


def agent_conversations(*, agent: Agent) -> QuerySet[Conversation]:
    return Conversation.objects.filter(company_id=agent.company_id, agent=agent)


def conversation_messages(
    *,
    agent: Agent,
    conversation_id: str | None = None,
    query: str | None = None,
    role: str | None = None,
    after_seq: int | None = None,
    before_seq: int | None = None,
) -> QuerySet[ConversationMessage]:
    """``agent``'s conversation history: one conversation's messages in ``seq`` order, or
    (``conversation_id=None``) every conversation's, for a recall search across them.

    ``query`` is a full-text search (websearch syntax, english stemming) served by the GIN
    index on the messages' text. Raises ``conversation_not_found`` for an unknown id.
    """
    messages = ConversationMessage.objects.filter(company_id=agent.company_id, agent=agent)
    if conversation_id is not None:
        conversation = conversation_get(agent=agent, conversation_id=conversation_id)
        messages = messages.filter(conversation=conversation)
    if role:
        messages = messages.filter(role=role)
    if after_seq is not None:
        messages = messages.filter(seq__gt=after_seq)
    if before_seq is not None:
        messages = messages.filter(seq__lt=before_seq)
    if query:
        messages = messages.annotate(_search=SearchVector("content", config="english")).filter(
            _search=SearchQuery(query, config="english", search_type="websearch")
        )
    return messages.select_related("conversation")


def conversation_runs(*, agent: Agent, conversation_id: str) -> QuerySet[ExtractionRun]:
    conversation = conversation_get(agent=agent, conversation_id=conversation_id)
    return ExtractionRun.objects.filter(conversation=conversation, agent=agent)


@dataclass(frozen=True)
class ExtractionOutcome:
    """How far the extraction of a range of a conversation's messages has got."""

    #: every message of the range is extracted (by the LLM, or its turns stored verbatim)
    done: bool
    #: the runs over the range, newest first
    runs: list[ExtractionRun]
    #: the live memories those runs added, oldest first
    memories: list[Memory]


def extraction_outcome(
    *, agent: Agent, conversation_id: str, first_seq: int, last_seq: int
) -> ExtractionOutcome:
    conversation = conversation_get(agent=agent, conversation_id=conversation_id)
    done = max(conversation.extracted_through_seq, conversation.verbatim_through_seq) >= last_seq
    runs = list(
        ExtractionRun.objects.filter(
            conversation=conversation, agent=agent, first_seq__lte=last_seq, last_seq__gte=first_seq
        ).order_by("-created_at", "-id")
    )
    added = list(
        ExtractedFact.objects.filter(
            run__in=[run.pk for run in runs],
            decision=ExtractedFact.Decision.ADDED,
            memory_id__isnull=False,
        )
        .order_by("run__created_at", "position")
        .values_list("memory_id", flat=True)
    )
    found = Memory.objects.filter(company_id=agent.company_id, agent=agent, pk__in=added).in_bulk()
    return ExtractionOutcome(
        done=done, runs=runs, memories=[found[pk] for pk in dict.fromkeys(added) if pk in found]
    )


def conversation_run_get(*, agent: Agent, conversation_id: str, run_id) -> ExtractionRun:
    run = (
        conversation_runs(agent=agent, conversation_id=conversation_id)
        .filter(pk=run_id)
        .prefetch_related("facts")
        .first()
    )
    if run is None:
        raise MemoryNotFoundError(RUN_NOT_FOUND, code="extraction_run_not_found")
    return run


def journal_days(*, agent: Agent) -> list[tuple[date, int]]:
    """Days with journal entries, newest first, with the number of entries of each."""
    from django.db.models import Count

    rows = (
        JournalEntry.objects.filter(company_id=agent.company_id, agent=agent)
        .values("day")
        .annotate(entries=Count("id"))
        .order_by("-day")
    )
    return [(row["day"], row["entries"]) for row in rows]


def journal_entries(*, agent: Agent, day: date) -> list[JournalEntry]:
    return list(
        JournalEntry.objects.filter(company_id=agent.company_id, agent=agent, day=day).order_by(
            "created_at", "id"
        )
    )


def journal_markdown(*, agent: Agent, day: date) -> str | None:
    """The day's journal as one Markdown document (``None`` when there is no entry)."""
    entries = journal_entries(agent=agent, day=day)
    if not entries:
        return None
    return render_journal(agent_name=agent.name, day=day, entries=[e.markdown for e in entries])


def render_journal(*, agent_name: str, day: date, entries: list[str]) -> str:
    head = f"# {day.isoformat()} — journal of {agent_name}\n"
    return head + "".join(f"\n{entry.rstrip()}\n" for entry in entries)


def agent_dream_runs(*, agent: Agent) -> QuerySet[DreamRun]:
    return DreamRun.objects.filter(company_id=agent.company_id, agent=agent)


DREAM_REQUEST_NOT_FOUND = "No such dream request of yours."


def agent_dream_request_get(*, agent: Agent, request_id) -> DreamRequest:
    """One of the agent's dream requests with its run (404 for anyone else's or unknown)."""
    request = (
        DreamRequest.objects.filter(company_id=agent.company_id, agent=agent, pk=request_id)
        .select_related("run")
        .first()
    )
    if request is None:
        raise MemoryNotFoundError(DREAM_REQUEST_NOT_FOUND, code="dream_request_not_found")
    return request


#: A fact's source message must share at least this many words (3+ letters) with it.
SOURCE_MIN_SHARED_WORDS = 2
_WORD = re.compile(r"[^\W\d_]{3,}")


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def extracted_fact_training_pairs(company, embedder_id: str):
    """Fine-tune pairs (``memory.core.extensions.register_training_pair_source``): a
    conversation message → the memory the LLM extracted from it.

    An extraction run records its whole batch of messages as a fact's provenance
    (``ExtractedFact.message_ids``), not the sentence it came from, so the source message is
    the batch's user or assistant message sharing the most words with the fact (at least
    :data:`SOURCE_MIN_SHARED_WORDS`; the later one on a tie); a fact no message shares
    enough words with gives no pair. Only facts the write gate added, whose memory is live
    with a vector of ``embedder_id``."""
    facts = list(
        ExtractedFact.objects.filter(
            run__company=company, decision=ExtractedFact.Decision.ADDED, memory_id__isnull=False
        )
        .order_by("run_id", "position")
        .values_list("content", "memory_id", "message_ids")
    )
    if not facts:
        return
    live = set(
        Memory.objects.live(timezone.now())
        .filter(
            company=company,
            id__in=[memory_id for _, memory_id, _ in facts],
            embedder_id=embedder_id,
            embedding__isnull=False,
        )
        .values_list("id", flat=True)
    )
    wanted = {m for _, memory_id, ids in facts if memory_id in live for m in ids}
    messages = {
        pk: (seq, content)
        for pk, seq, content in ConversationMessage.objects.filter(
            company=company,
            pk__in=wanted,
            role__in=[ConversationMessage.Role.USER, ConversationMessage.Role.ASSISTANT],
        ).values_list("pk", "seq", "content")
    }
    for content, memory_id, message_ids in facts:
        if memory_id not in live:
            continue
        fact_words = _words(content)
        best = max(
            (
                (len(fact_words & _words(text)), seq, text)
                for seq, text in (messages[m] for m in message_ids if m in messages)
            ),
            default=None,
        )
        if best is not None and best[0] >= SOURCE_MIN_SHARED_WORDS and best[2].strip():
            yield best[2], memory_id
