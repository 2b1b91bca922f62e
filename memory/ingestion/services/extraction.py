"""Extracting memories from flushed conversations: claim → one LLM call → the write gate.

:func:`conversation_extract` is what the debounced q2 task (and the sweep, and the tests)
call for one conversation:

1. **Claim** (the kernel's claim protocol, :func:`~synthorg.jobs.services.lease_claim`: one
   conditional update, no row lock held): the unextracted range
   ``extracted_through_seq+1 .. message_count`` (capped at ``max_batch_tokens``) is
   recorded as an :class:`ExtractionRun` and the conversation's ``claim_run`` points at it
   until ``claim_expires_at`` — a short lease that a keeper thread renews while the run
   works. A second worker finds the claim and does nothing, so two workers never extract
   the same messages. A claim whose lease ran out (a worker died) is taken over and the
   dead run marked ``failed``.
2. **Turns** (``store_turns``, the default): the range's turns are stored as EPISODIC
   memories first (a ``verbatim`` run, trigger ``turns``; ``verbatim_through_seq`` keeps a
   turn from being stored twice), so the conversation is remembered whatever the LLM does;
   the LLM's facts are added on top. With ``store_turns: false`` the turns are stored only
   when the LLM run fails (trigger ``llm_failed``). When every LLM slot of the company is
   taken (a ``deferred`` run), the turns are still stored at once: only the facts wait.
   **Extract** (no transaction, no lock): the new messages, the running summary and the
   agent's most relevant memories go to the LLM with the JSON contract, requested as
   ``response_format: json_schema`` and validated in any case (``method`` ``llm``). An LLM
   error or an invalid answer ⇒ ``failed``: the messages stay stored and searchable,
   ``extracted_through_seq`` does not move, and a later run (the sweep, with backoff)
   retries the same range. **No LLM configured** ⇒ the turns themselves become EPISODIC
   memories through the same write gate (``method`` ``verbatim``, tag ``verbatim``), each
   with the message it answers as its ``context`` (at most :data:`VERBATIM_CONTEXT_CHARS`
   characters); system messages are not stored. The run ends ``succeeded``.
3. **Apply** (one transaction): facts under ``min_confidence`` are dropped; the others go
   through ``memory_store_batch`` — the same write gate as a hand-written memory: ADD, NOOP
   (near duplicate) or SUPERSEDE. ``supersedes`` ids that are not the agent's own live
   private memories are ignored and logged. Nothing is ever deleted. Each fact's
   provenance (run, conversation, message ids) is an :class:`ExtractedFact` row and the
   memory's ``source`` names the run. The run's counts, a journal entry and the
   conversation's progress commit together; then the bounded-growth cap is applied.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from memory.core.domain import MEMORY_CONTENT_MAX_CHARS, MemoryStoreRequest
from memory.core.llm import completion_provider_for
from memory.core.models.memory import Memory
from memory.core.retrieval.query import TEXT_MAX_CHARS, MemoryQuery
from memory.core.retrieval.speakers import speaker_tag
from memory.core.selectors.search import memory_search
from memory.core.services.store import memory_store_batch
from memory.ingestion.domain import ProposedFacts, parse_uuid
from memory.ingestion.models import (
    Conversation,
    ConversationMessage,
    ExtractedFact,
    ExtractionRun,
)
from memory.ingestion.prompts import (
    InvalidAnswerError,
    PromptMemory,
    PromptMessage,
    extraction_messages,
    extraction_response_format,
    parse_facts,
)
from memory.ingestion.services.growth import memories_trim_to_cap
from memory.ingestion.services.journal import journal_append_extraction
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory, MemoryLevel
from synthorg.errors import DomainError
from synthorg.jobs.dispatch import (
    companies_dispatch,
    jobs_serve_turns,
    jobs_take_turn,
    jobs_wait_turn,
)
from synthorg.jobs.policy import RetryPolicy
from synthorg.jobs.registry import llm_job_lease
from synthorg.jobs.services import lease_claim, lease_kept
from synthorg.llm import Completion, CompletionProvider, LLMError
from synthorg.llm.slots import company_llm_concurrency, company_llm_slot
from synthorg.llm.structured import complete_json
from synthorg.text import clip

logger = logging.getLogger(__name__)

MAX_BACKOFF = timedelta(hours=1)
CLAIM_EXPIRED = "the worker holding the claim did not finish within the lease"
NO_LLM = "no LLM is configured (SYNTHORG_LLM_BASE_URL / SYNTHORG_LLM_MODEL)"
VERBATIM_TAG = "verbatim"
VERBATIM_CONTEXT_CHARS = 300
DEFERRED = (
    "deferred: the company's LLM slots are busy (SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}); "
    "the next sweep runs it"
)
EXTRACT_COMPANY_TASK = "memory.ingestion.tasks.extract_company_conversations"
#: The extraction sweep's name among the kinds sharing a company's LLM slots
#: (:mod:`synthorg.jobs.dispatch`): found busy, it waits for its turn under this name.
EXTRACTION_SWEEP = "ingestion.extraction"


@dataclass
class _Claim:
    run: ExtractionRun
    conversation: Conversation


def conversation_extract(
    *,
    conversation: Conversation,
    trigger: str | None = None,
    force: bool = False,
    provider: CompletionProvider | None = None,
    now: datetime | None = None,
) -> ExtractionRun | None:
    """Extract the unprocessed messages of ``conversation``; see the module docstring.

    Returns the run, or ``None`` when there was nothing to do: nothing pending, not due yet
    (the debounce was pushed by a later flush; unless ``force``), extraction disabled, or
    another worker holds the claim.
    """
    now = now or timezone.now()
    agent = conversation.agent
    config = company_config(agent.company).memory.extraction
    if not config.enabled:
        return None
    if agent.memory_level == MemoryLevel.NONE:
        # The agent stopped keeping memories since these messages were flushed: nothing to
        # extract into; the messages stay, and nothing is due any more.
        Conversation.objects.filter(pk=conversation.pk).update(extraction_due_at=None)
        return None
    if provider is None:
        provider = completion_provider_for(company=agent.company, agent=agent)
    if provider is None:
        claim = _claim(conversation.pk, trigger=trigger, force=force, now=now, config=config)
        if claim is None:
            return None
        with _kept(claim):
            return _extract_verbatim(claim, config=config)
    with company_llm_slot(agent.company_id) as slot:
        if not slot:
            # whoever holds the slot serves the sweep's turn before letting it go
            jobs_wait_turn(agent.company_id, EXTRACTION_SWEEP, now=now)
            deferred = _defer(conversation.pk, trigger=trigger, force=force, now=now, config=config)
            if deferred is not None and config.store_turns:
                # the turns need no LLM: remembered now; the LLM's facts follow once a slot
                # is free (the LLM run skips the turns already stored)
                _store_turns(deferred, trigger=ExtractionRun.Trigger.TURNS)
            return deferred
        claim = _claim(
            conversation.pk, trigger=trigger, force=force, now=now, config=config, llm=True
        )
        if claim is None:
            return None
        with _kept(claim):
            return _extract_with_llm(claim, provider, config=config)


def _extract_with_llm(claim: _Claim, provider: CompletionProvider, *, config) -> ExtractionRun:
    run = claim.run
    if config.store_turns:
        # the turns first, so they are remembered whatever the LLM does; its facts on top
        _store_turns(run, trigger=ExtractionRun.Trigger.TURNS)
    run.method = ExtractionRun.Method.LLM
    messages = list(
        ConversationMessage.objects.filter(
            conversation_id=run.conversation_id, seq__gte=run.first_seq, seq__lte=run.last_seq
        ).order_by("seq")
    )
    try:
        facts, completion = _ask(provider, claim, messages, config=config)
    except (LLMError, InvalidAnswerError) as exc:
        logger.warning(
            "extraction run %s of conversation %s failed: %s", run.pk, run.conversation_id, exc
        )
        failed = _finish_unsuccessful(
            claim, ExtractionRun.Status.FAILED, str(exc)[:2000], now=timezone.now()
        )
        _store_turns(failed, trigger=ExtractionRun.Trigger.LLM_FAILED)
        return failed
    try:
        return _apply(claim, facts, completion, messages, config=config)
    except _LostClaim:
        logger.warning("extraction run %s lost its claim (lease expired); rolled back", run.pk)
        return None
    except DomainError as exc:  # e.g. the project closed meanwhile
        logger.warning("extraction run %s could not store its facts: %s", run.pk, exc)
        return _finish_unsuccessful(
            claim, ExtractionRun.Status.FAILED, str(exc)[:2000], now=timezone.now()
        )


def _due(now: datetime):
    return Conversation.objects.filter(extraction_due_at__lte=now).filter(
        extracted_through_seq__lt=F("message_count")
    )


def conversations_extract_dispatch(*, now: datetime | None = None) -> tuple[int, ...]:
    """The ``ingestion-extraction-sweep`` schedule (every minute): hand every company with
    due conversations its own task on the LLM cluster
    (:func:`conversations_extract_due_company`). Returns the companies dispatched."""
    return companies_dispatch(_due, (EXTRACT_COMPANY_TASK,), now=now)


@dataclass(frozen=True)
class DueRuns:
    runs: int  # extraction runs made
    waiting: int  # due conversations left for the next sweep (an LLM failure, busy slots)
    busy: bool = False  # every LLM slot of the company was taken: nothing ran


def conversations_extract_due_company(
    *, company_id: int, now: datetime | None = None, limit: int = 100
) -> DueRuns:
    """Run one company's due conversations (oldest due first, at most ``limit``): lost
    schedules, the rest of capped batches, retries after failures.

    With an LLM configured this holds one of the company's LLM slots
    (:mod:`synthorg.llm.slots`); with every slot taken no LLM runs (``busy``: nothing is
    charged, the sweep waits for its turn — whoever holds the slot, a capture retry or an
    evolver draft, runs it before letting go — or for the next sweep) but each due
    conversation's turns are stored at once, as when its own task finds the slots busy.
    Holding the slot, it serves the turns of the kinds that found it busy meanwhile. The
    first run that fails (an LLM outage, a hanging model cut by its timeout) stops the
    batch: the others keep their due time, so an outage costs one LLM call per company per
    sweep, not one per conversation. Without
    an LLM the turns are stored verbatim, no slot needed.
    """
    now = now or timezone.now()
    due = list(
        _due(now)
        .filter(company_id=company_id)
        .select_related("agent", "company")
        .order_by("extraction_due_at", "pk")[:limit]
    )
    if not due:
        return DueRuns(runs=0, waiting=0)
    llm = completion_provider_for(company=due[0].company)
    if llm is None:
        runs = sum(1 for c in due if conversation_extract(conversation=c, provider=None, now=now))
        return DueRuns(runs=runs, waiting=0)
    runs = 0
    with company_llm_slot(company_id) as slot:
        if not slot:
            logger.info("extraction sweep of company %s waits: LLM slots busy", company_id)
            # The turns need no LLM: each conversation takes the per-conversation path,
            # which finds the slots busy too, records the wait and stores the turns now.
            for conversation in due:
                conversation_extract(
                    conversation=conversation,
                    provider=completion_provider_for(
                        company=conversation.company, agent=conversation.agent
                    ),
                    now=now,
                )
            return DueRuns(runs=0, waiting=len(due), busy=True)
        jobs_take_turn(company_id, EXTRACTION_SWEEP)
        waiting = 0
        for index, conversation in enumerate(due):
            provider = completion_provider_for(
                company=conversation.company, agent=conversation.agent
            )
            run = conversation_extract(conversation=conversation, provider=provider, now=now)
            if run is None:
                continue
            runs += 1
            if run.status == ExtractionRun.Status.FAILED:
                waiting = len(due) - index - 1
                break
        # The kinds that found the slot busy meanwhile (a capture retry, an evolver draft)
        # run before it is let go: two ticks that collide every minute cannot starve one.
        jobs_serve_turns(company_id, now=now, holder=EXTRACTION_SWEEP)
    return DueRuns(runs=runs, waiting=waiting)


def extraction_sweep_serve(company_id: int, now: datetime) -> int:
    """The sweep's turn (:class:`~synthorg.jobs.registry.SlotSweep`): a holder of one of the
    company's LLM slots runs its due conversations; returns the runs made."""
    return conversations_extract_due_company(company_id=company_id, now=now).runs


def conversations_extract_due(*, now: datetime | None = None, limit: int = 100) -> int:
    """Every company's due conversations, company by company, in this process (what the
    per-company tasks of :func:`conversations_extract_dispatch` do; tests and benchmarks).
    Returns the number of runs made."""
    now = now or timezone.now()
    companies = _due(now).order_by("company_id").values_list("company_id", flat=True).distinct()
    return sum(
        conversations_extract_due_company(company_id=company_id, now=now, limit=limit).runs
        for company_id in list(companies)
    )


@transaction.atomic
def _defer(conversation_pk: int, *, trigger, force: bool, now: datetime, config):
    """Every LLM slot of the company is taken: record a ``deferred`` run (nothing claimed,
    no failure counted) and leave the conversation due, so the next sweep runs it; the
    worker is free at once. ``None`` when the conversation had nothing due anyway, or when
    its latest run already records this range as deferred (one row per wait, not one per
    worker or sweep that found the slots busy)."""
    conversation = Conversation.objects.select_for_update().filter(pk=conversation_pk).first()
    if conversation is None:
        return None
    claimed = (
        conversation.claim_run_id is not None
        and conversation.claim_expires_at is not None
        and conversation.claim_expires_at > now
    )
    first = conversation.extracted_through_seq + 1
    due = force or (
        conversation.extraction_due_at is not None and conversation.extraction_due_at <= now
    )
    if claimed or first > conversation.message_count or not due:
        return None
    latest = (
        ExtractionRun.objects.filter(conversation_id=conversation_pk)
        # the turns stored during the wait are a by-product of it, not a new attempt
        .exclude(trigger=ExtractionRun.Trigger.TURNS)
        .order_by("-created_at")
        .values_list("status", "first_seq")
        .first()
    )
    if latest == (ExtractionRun.Status.DEFERRED, first):
        return None
    last = _batch_end(conversation, first, config.max_batch_tokens)
    logger.info("extraction of conversation %s deferred: LLM slots busy", conversation_pk)
    return ExtractionRun.objects.create(
        company_id=conversation.company_id,
        agent_id=conversation.agent_id,
        conversation=conversation,
        trigger=_trigger(conversation, trigger, force=force, config=config),
        status=ExtractionRun.Status.DEFERRED,
        error=DEFERRED.format(limit=company_llm_concurrency()),
        first_seq=first,
        last_seq=last,
        message_count=last - first + 1,
        model=config.model or "",
        created_at=now,
        finished_at=now,
    )


# --- 1. claim ------------------------------------------------------------------------------


def _trigger(conversation: Conversation, trigger, *, force: bool, config) -> str:
    if trigger is not None:
        return trigger
    if force:
        return ExtractionRun.Trigger.MANUAL
    if conversation.consecutive_failures:
        return ExtractionRun.Trigger.RETRY
    if conversation.pending_tokens >= config.max_pending_tokens:
        return ExtractionRun.Trigger.PENDING_TOKENS
    return ExtractionRun.Trigger.DEBOUNCE


def _claim(conversation_pk: int, *, trigger, force: bool, now: datetime, config, llm: bool = False):
    """Claim the conversation's unextracted range with the kernel's claim protocol
    (:func:`~synthorg.jobs.services.lease_claim`): the run is recorded and the conversation's
    ``claim_run`` points at it until ``claim_expires_at``, in one conditional update that
    holds only while nobody extracted or claimed meanwhile. A claim whose lease passed (its
    worker died) is taken over and its run marked ``failed``."""
    conversation = (
        Conversation.objects.select_related("agent", "company").filter(pk=conversation_pk).first()
    )
    if conversation is None:
        return None
    expired = conversation.claim_run_id
    if expired is not None and (
        conversation.claim_expires_at is not None and conversation.claim_expires_at > now
    ):
        return None  # another worker is extracting these messages
    first = conversation.extracted_through_seq + 1
    unchanged = Conversation.objects.filter(
        pk=conversation_pk,
        claim_run_id=expired,
        extracted_through_seq=conversation.extracted_through_seq,
    )
    if first > conversation.message_count:
        if unchanged.filter(message_count__lt=first).update(extraction_due_at=None, claim_run=None):
            _expire(expired, now)
        return None
    if not force and conversation.extraction_due_at is not None:
        if conversation.extraction_due_at > now:
            return None  # the debounce was pushed forward; the re-armed schedule fires later
        unchanged = unchanged.filter(extraction_due_at__lte=now)
    last = _batch_end(conversation, first, config.max_batch_tokens)
    with transaction.atomic():
        run = ExtractionRun.objects.create(
            company_id=conversation.company_id,
            agent_id=conversation.agent_id,
            conversation=conversation,
            trigger=_trigger(conversation, trigger, force=force, config=config),
            first_seq=first,
            last_seq=last,
            message_count=last - first + 1,
            model=(config.model or "") if llm else "",
            created_at=now,
        )
        if not lease_claim(
            unchanged,
            lease_field="claim_expires_at",
            until=now + llm_job_lease(),
            now=now,
            claim_run=run,
        ):
            transaction.set_rollback(True)  # another worker won: no run recorded
            return None
        _expire(expired, now)
    conversation.claim_run = run
    conversation.claim_expires_at = now + llm_job_lease()
    return _Claim(run=run, conversation=conversation)


def _expire(run_pk, now: datetime) -> None:
    """The run whose claim was taken over (its worker died) failed."""
    if run_pk is not None:
        ExtractionRun.objects.filter(pk=run_pk, status=ExtractionRun.Status.RUNNING).update(
            status=ExtractionRun.Status.FAILED, error=CLAIM_EXPIRED, finished_at=now
        )


def _kept(claim: _Claim):
    """The keeper of ``claim``'s lease while its run works (a range whose claim was taken
    over is not renewed)."""

    def renew() -> None:
        Conversation.objects.filter(pk=claim.conversation.pk, claim_run_id=claim.run.pk).update(
            claim_expires_at=timezone.now() + llm_job_lease()
        )

    return lease_kept(renew, llm_job_lease())


def _batch_end(conversation: Conversation, first: int, max_tokens: int) -> int:
    """The last seq of a batch starting at ``first`` within ``max_tokens`` (≥ 1 message)."""
    sizes = (
        ConversationMessage.objects.filter(conversation=conversation, seq__gte=first)
        .order_by("seq")
        .values_list("seq", "token_count")
    )
    last, used = first, 0
    for seq, tokens in sizes.iterator(chunk_size=500):
        if used and used + tokens > max_tokens:
            break
        last, used = seq, used + tokens
    return last


# --- 2. extract ----------------------------------------------------------------------------


def _ask(provider: CompletionProvider, claim: _Claim, messages, *, config):
    conversation = claim.conversation
    memories = _relevant_memories(conversation, messages, limit=config.relevant_memories)
    prompt = extraction_messages(
        messages=[PromptMessage(m.seq, m.role, m.name, m.content) for m in messages],
        summary=conversation.summary,
        memories=memories,
        max_facts=config.max_facts_per_run,
    )
    kwargs = {"model": config.model, "temperature": config.temperature}
    completion = complete_json(
        provider, prompt, response_format=extraction_response_format(), **kwargs
    )
    claim.run.model = completion.model
    claim.run.input_tokens = completion.usage.input_tokens
    claim.run.output_tokens = completion.usage.output_tokens
    return (
        parse_facts(completion.content, truncated=completion.finish_reason == "length"),
        completion,
    )


def _relevant_memories(conversation: Conversation, messages, *, limit: int) -> list[PromptMemory]:
    if limit <= 0:
        return []
    text = " ".join(m.content for m in messages)[-TEXT_MAX_CHARS:]
    try:
        # the turns stored verbatim are the conversation itself, not what is already known
        # about it: shown to the LLM they would make it propose nothing new
        # Only what is known about the same end user (or, for a conversation with none,
        # about nobody in particular): the LLM never sees one person's facts while
        # extracting another's, nor copies them into a memory that outlives their erasure.
        result = memory_search(
            agent=conversation.agent,
            query=MemoryQuery(
                text=text,
                limit=limit * 3,
                min_relevance=0.0,
                subject=conversation.subject or None,
            ),
            include_shared=False,
        )
    except Exception:  # ranking context is an aid; extraction proceeds without it
        logger.exception("relevant-memory search for conversation %s failed", conversation.pk)
        return []
    return [
        PromptMemory(
            id=str(hit.memory.pk), category=hit.memory.category, content=hit.memory.content[:1000]
        )
        for hit in result.hits
        if VERBATIM_TAG not in hit.memory.tags and hit.memory.subject == conversation.subject
    ][:limit]


# --- 3. apply ------------------------------------------------------------------------------


def _apply(claim: _Claim, answer: ProposedFacts, completion: Completion, messages, *, config):
    run = claim.run
    conversation = claim.conversation
    agent = conversation.agent
    now = timezone.now()
    facts = list(answer.facts[: config.max_facts_per_run])
    kept = [(i, f) for i, f in enumerate(facts) if f.confidence >= config.min_confidence]
    message_ids = [m.pk for m in messages]
    supersedable = _own_supersedable(
        agent, [s for _, f in kept for s in f.supersedes], now, subject=conversation.subject
    )
    claimed_ids: set[UUID] = set()
    plans = []
    for index, fact in kept:
        valid, ignored = [], []
        for raw in fact.supersedes:
            mid = parse_uuid(raw)
            if mid is None or mid not in supersedable or mid in claimed_ids:
                ignored.append(str(raw)[:64])
                continue
            claimed_ids.add(mid)
            valid.append(mid)
        if ignored:
            logger.warning(
                "extraction run %s: ignored supersedes %s (not the agent's own live memories)",
                run.pk,
                ignored,
            )
        plans.append((index, fact, valid, ignored))

    with transaction.atomic():
        results = []
        if plans:
            requests = [
                MemoryStoreRequest(
                    content=fact.content,
                    category=MemoryCategory(fact.category),
                    confidence=fact.confidence,
                    tags=fact.tags,
                    source=f"extraction:{run.pk}",
                    session_id=conversation.session_id or None,
                    project_id=conversation.project_id,
                    supersedes=tuple(valid),
                    subject=conversation.subject or None,
                )
                for _, fact, valid, _ in plans
            ]
            results = memory_store_batch(agent=agent, requests=requests, now=now)
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        if locked.claim_run_id != run.pk:
            # Our lease ran out and another worker took the range over: roll back.
            raise _LostClaim()
        rows = []
        outcome = {
            index: (valid, ignored, result)
            for (index, _, valid, ignored), result in zip(plans, results, strict=True)
        }
        for index, fact in enumerate(facts):
            if index not in outcome:
                rows.append(
                    _fact_row(
                        run,
                        index,
                        fact,
                        ExtractedFact.Decision.BELOW_CONFIDENCE,
                        None,
                        [],
                        [],
                        message_ids,
                    )
                )
                continue
            valid, ignored, result = outcome[index]
            decision = (
                ExtractedFact.Decision.NOOP if result.deduplicated else ExtractedFact.Decision.ADDED
            )
            rows.append(
                _fact_row(run, index, fact, decision, result.id, valid, ignored, message_ids)
            )
        ExtractedFact.objects.bulk_create(rows)
        run.facts_proposed = len(facts)
        run.added = sum(1 for r in rows if r.decision == ExtractedFact.Decision.ADDED)
        run.skipped = sum(1 for r in rows if r.decision == ExtractedFact.Decision.NOOP)
        run.superseded = sum(len(r.superseded_ids) for r in rows)
        run.below_confidence = len(facts) - len(kept)
        run.ignored_supersedes = sum(len(r.ignored_supersedes) for r in rows)
        run.status = ExtractionRun.Status.SUCCEEDED
        run.finished_at = now
        run.save()
        _advance(locked, run, config=config, now=now)
        journal_append_extraction(run=run, conversation=locked, facts=rows, now=now)
    memories_trim_to_cap(agent=agent, now=now)
    return run


def _advance(locked: Conversation, run: ExtractionRun, *, config, now: datetime) -> None:
    """Move the conversation past ``run``'s range and release the claim."""
    pending = _pending_tokens(locked, after=run.last_seq)
    locked.extracted_through_seq = run.last_seq
    locked.pending_tokens = pending
    locked.claim_run = None
    locked.claim_expires_at = None
    locked.consecutive_failures = 0
    more = locked.message_count > run.last_seq
    if more and (
        locked.extraction_due_at is None
        or pending >= config.max_pending_tokens
        or locked.extraction_due_at <= now
    ):
        locked.extraction_due_at = now  # the rest of a capped batch: the sweep takes it
    elif not more:
        locked.extraction_due_at = None
    locked.save(
        update_fields=[
            "extracted_through_seq",
            "pending_tokens",
            "claim_run",
            "claim_expires_at",
            "consecutive_failures",
            "extraction_due_at",
        ]
    )


def _verbatim_context(message, previous) -> str:
    """The message ``message`` answers: the one just before it, from another speaker (a
    system prompt is not something a turn answers)."""
    if (
        previous is None
        or previous.role in (message.role, ConversationMessage.Role.SYSTEM)
        or not previous.content.strip()
    ):
        return ""
    speaker = previous.name or previous.role
    return f"In reply to {speaker}: {clip(previous.content, VERBATIM_CONTEXT_CHARS)}"


def _speaker_tags(message) -> tuple[str, ...]:
    """Who said the turn: its role (``user``/``assistant``, which the search's speaker
    feature maps to first- and second-person questions) and its name, if it has one."""
    names = dict.fromkeys(speaker_tag(n) for n in (message.role, message.name) if n)
    return tuple(names)


def _verbatim_requests(run: ExtractionRun, conversation: Conversation, *, first_seq: int):
    """The turns ``first_seq .. run.last_seq`` as EPISODIC memory requests (system messages
    and blank turns are not stored), with the messages they come from."""
    window = list(
        ConversationMessage.objects.filter(
            conversation_id=conversation.pk,
            seq__gte=max(first_seq - 1, 1),
            seq__lte=run.last_seq,
        ).order_by("seq")
    )
    messages = [m for m in window if m.seq >= first_seq]
    previous = {m.seq: p for p, m in zip([None, *window], window, strict=False)}
    turns = [m for m in messages if m.role != ConversationMessage.Role.SYSTEM and m.content.strip()]
    requests = [
        MemoryStoreRequest(
            content=m.content[:MEMORY_CONTENT_MAX_CHARS],
            category=MemoryCategory.EPISODIC,
            context=_verbatim_context(m, previous.get(m.seq)),
            tags=(VERBATIM_TAG, *_speaker_tags(m)),
            source=f"extraction:{run.pk}",
            session_id=conversation.session_id or None,
            project_id=conversation.project_id,
            subject=conversation.subject or None,
        )
        for m in turns
    ]
    return turns, requests


def _store_verbatim(run: ExtractionRun, agent, turns, requests, *, now: datetime) -> list:
    """Store ``requests`` through the write gate and record them as ``run``'s facts; sets the
    run's counts and marks it ``succeeded`` by ``verbatim`` (the caller saves it)."""
    results = memory_store_batch(agent=agent, requests=requests, now=now) if requests else []
    rows = [
        ExtractedFact(
            run=run,
            position=index,
            content=request.content,
            category=request.category.value,
            confidence=request.confidence,
            tags=list(request.tags),
            decision=ExtractedFact.Decision.NOOP
            if result.deduplicated
            else ExtractedFact.Decision.ADDED,
            memory_id=result.id,
            message_ids=[message.pk],
        )
        for index, (message, request, result) in enumerate(
            zip(turns, requests, results, strict=True)
        )
    ]
    ExtractedFact.objects.bulk_create(rows)
    run.method = ExtractionRun.Method.VERBATIM
    run.facts_proposed = len(rows)
    run.added = sum(1 for r in rows if r.decision == ExtractedFact.Decision.ADDED)
    run.skipped = len(rows) - run.added
    run.status = ExtractionRun.Status.SUCCEEDED
    run.finished_at = now
    return rows


def _extract_verbatim(claim: _Claim, *, config) -> ExtractionRun:
    """No LLM: store the range's turns as EPISODIC memories through the write gate."""
    run = claim.run
    conversation = claim.conversation
    agent = conversation.agent
    now = timezone.now()
    turns, requests = _verbatim_requests(run, conversation, first_seq=run.first_seq)
    run.method = ExtractionRun.Method.VERBATIM
    try:
        with transaction.atomic():
            # memories first, then the conversation's row lock (the order _apply takes)
            rows = _store_verbatim(run, agent, turns, requests, now=now)
            locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
            if locked.claim_run_id != run.pk:
                raise _LostClaim()
            run.save()
            locked.verbatim_through_seq = max(locked.verbatim_through_seq, run.last_seq)
            locked.save(update_fields=["verbatim_through_seq"])
            _advance(locked, run, config=config, now=now)
            journal_append_extraction(run=run, conversation=locked, facts=rows, now=now)
    except _LostClaim:
        logger.warning("extraction run %s lost its claim (lease expired); rolled back", run.pk)
        return None
    except DomainError as exc:  # e.g. the project closed meanwhile
        logger.warning("extraction run %s could not store its turns: %s", run.pk, exc)
        return _finish_unsuccessful(
            claim, ExtractionRun.Status.FAILED, str(exc)[:2000], now=timezone.now()
        )
    memories_trim_to_cap(agent=agent, now=now)
    return run


def _store_turns(source: ExtractionRun, *, trigger: str) -> ExtractionRun | None:
    """Store the turns of the LLM run ``source``'s range verbatim (those not stored yet) as a
    run of their own: before the LLM is asked (trigger ``turns``, ``store_turns``), or after
    it failed (trigger ``llm_failed``), so the conversation is remembered during an outage.
    The range's LLM progress is not touched (``extracted_through_seq``, the retry's due
    time): the LLM's facts are added on top once it answers."""
    failed = source
    now = timezone.now()
    conversation = (
        Conversation.objects.select_related("agent").filter(pk=failed.conversation_id).first()
    )
    if conversation is None:  # purged meanwhile
        return None
    first = max(failed.first_seq, conversation.verbatim_through_seq + 1)
    if first > failed.last_seq:
        return None  # an earlier failed run already stored these turns
    try:
        with transaction.atomic():
            run = ExtractionRun.objects.create(
                company_id=conversation.company_id,
                agent_id=conversation.agent_id,
                conversation=conversation,
                trigger=trigger,
                first_seq=first,
                last_seq=failed.last_seq,
                message_count=failed.last_seq - first + 1,
                created_at=now,
            )
            turns, requests = _verbatim_requests(run, conversation, first_seq=first)
            # memories first, then the conversation's row lock (the order _apply takes)
            rows = _store_verbatim(run, conversation.agent, turns, requests, now=now)
            locked = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
            if locked is None or locked.verbatim_through_seq >= first:
                raise _LostClaim()  # purged, or another worker stored these turns meanwhile
            run.save()
            locked.verbatim_through_seq = failed.last_seq
            locked.save(update_fields=["verbatim_through_seq"])
            journal_append_extraction(run=run, conversation=locked, facts=rows, now=now)
    except _LostClaim:
        return None
    except DomainError as exc:  # e.g. the project closed meanwhile
        logger.warning("turns of run %s not stored verbatim: %s", failed.pk, exc)
        return None
    memories_trim_to_cap(agent=conversation.agent, now=now)
    return run


class _LostClaim(Exception):
    pass


def _fact_row(run, index, fact, decision, memory_id, superseded, ignored, message_ids):
    return ExtractedFact(
        run=run,
        position=index,
        content=fact.content,
        category=fact.category,
        confidence=fact.confidence,
        tags=list(fact.tags),
        decision=decision,
        memory_id=memory_id,
        superseded_ids=list(superseded)
        if decision != ExtractedFact.Decision.BELOW_CONFIDENCE
        else [],
        ignored_supersedes=list(ignored),
        message_ids=message_ids,
    )


def _own_supersedable(agent, raw_ids, now, *, subject: str = "") -> set[UUID]:
    """Of ``raw_ids``, the agent's own live, private, not yet superseded memories about the
    conversation's end user (``subject``; ``""``: about nobody in particular)."""
    ids = {mid for mid in (parse_uuid(r) for r in raw_ids) if mid is not None}
    if not ids:
        return set()
    live = Memory.objects.filter(
        agent=agent, is_shared=False, superseded_at__isnull=True, pk__in=ids, subject=subject
    ).exclude(expires_at__lte=now)
    return set(live.values_list("pk", flat=True))


def _pending_tokens(conversation: Conversation, *, after: int) -> int:
    total = ConversationMessage.objects.filter(conversation=conversation, seq__gt=after).aggregate(
        total=Sum("token_count")
    )["total"]
    return total or 0


def extraction_retry_policy(config) -> RetryPolicy:
    """The kernel's retry policy with the company's base (``retry_backoff_seconds``),
    doubling per consecutive failure, at most an hour; extraction never gives up (the turns
    are stored verbatim meanwhile)."""
    return RetryPolicy(base=timedelta(seconds=config.retry_backoff_seconds), max_delay=MAX_BACKOFF)


def _finish_unsuccessful(claim: _Claim, status: str, error: str, *, now: datetime):
    """Record a run that extracted nothing; the range stays pending and is retried later
    (after a backoff doubling per consecutive failure, at most an hour)."""
    run = claim.run
    with transaction.atomic():
        conversation = (
            Conversation.objects.select_for_update().filter(pk=claim.conversation.pk).first()
        )
        if conversation is None:  # purged meanwhile (session ended, project closed)
            return run
        run.status = status
        run.error = error
        run.finished_at = now
        run.save()
        config = company_config(conversation.company).memory.extraction
        if conversation.claim_run_id == run.pk or conversation.claim_run_id is None:
            conversation.claim_run = None
            conversation.claim_expires_at = None
            conversation.consecutive_failures += 1
            conversation.extraction_due_at = now + extraction_retry_policy(config).delay(
                conversation.consecutive_failures
            )
            conversation.save(
                update_fields=[
                    "claim_run",
                    "claim_expires_at",
                    "consecutive_failures",
                    "extraction_due_at",
                ]
            )
    return run
