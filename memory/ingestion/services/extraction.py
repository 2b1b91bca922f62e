"""Extracting memories from flushed conversations: a durable job → one LLM call → the write gate.

An :class:`ExtractionRun` is a durable job (:mod:`synthorg.jobs`, the kind
:data:`EXTRACTION_JOB`, ``ingestion.extraction``) over a conversation's unextracted range.
:func:`conversation_extract` is what the debounced q2 task (and the tests) call for one
conversation; the every-minute dispatch (``jobs-ingestion.extraction``, :func:`_prepare`)
queues the runs of due conversations whose own task was lost and hands the due runs to the
kernel's per-company dispatcher:

1. **Queue and claim** (the kernel's one claim protocol). A due conversation's one open run
   (queued, running, or failed and due again: a partial unique index keeps one per
   conversation) is found or queued, then claimed with
   :func:`~synthorg.jobs.services.job_claim` under the kernel's lease, which a keeper thread
   renews while the run works. A second worker finds it running and does nothing. A run
   whose worker died is reclaimed once its lease passes (due at once) and runs again. The
   range is fixed when the run starts: ``extracted_through_seq+1 .. message_count``, capped
   at ``max_batch_tokens``.
2. **Turns** (``store_turns``, the default): the range's turns are stored as EPISODIC
   memories first (a ``verbatim`` run, trigger ``turns``; ``verbatim_through_seq`` keeps a
   turn from being stored twice), so the conversation is remembered whatever the LLM does;
   the LLM's facts are added on top. With ``store_turns: false`` the turns are stored only
   when the LLM run fails (trigger ``llm_failed``). When every LLM slot of the company is
   taken the run is deferred (:func:`~synthorg.jobs.services.job_defer`: back to
   ``queued``, not an attempt, waiting for its turn); the turns are still stored at once:
   only the facts wait.
   **Extract** (no transaction, no lock): the new messages, the running summary and the
   agent's most relevant memories go to the LLM with the JSON contract, requested as
   ``response_format: json_schema`` and validated in any case (``method`` ``llm``). An LLM
   error or an invalid answer ⇒ the kernel's retry (:func:`~synthorg.jobs.services.job_fail`
   with :func:`extraction_retry_policy`): ``failed``, due again after a back-off doubling
   from the company's ``retry_backoff_seconds`` (at most an hour); after the policy's last
   attempt ``gave_up`` — the console's failures page lists it and an operator can re-queue
   it, and the next flush queues a new run meanwhile. The messages stay stored and
   searchable and ``extracted_through_seq`` does not move. **No LLM configured** ⇒ the
   turns themselves become EPISODIC memories through the same write gate (``method``
   ``verbatim``, tag ``verbatim``), each with the message it answers as its ``context`` (at
   most :data:`VERBATIM_CONTEXT_CHARS` characters); system messages are not stored. The run
   ends ``succeeded``.
3. **Apply** (one transaction, fenced by the lease: a run whose lease was taken over writes
   nothing): facts under ``min_confidence`` are dropped; the others go through
   ``memory_store_batch`` — the same write gate as a hand-written memory: ADD, NOOP (near
   duplicate) or SUPERSEDE. ``supersedes`` ids that are not the agent's own live private
   memories are ignored and logged. Nothing is ever deleted. Each fact's provenance (run,
   conversation, message ids) is an :class:`ExtractedFact` row and the memory's ``source``
   names the run. The run's counts, a journal entry and the conversation's progress commit
   together; then the bounded-growth cap is applied.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import F, Q, Sum
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
    ExtractionRunStatusChange,
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
from persistence.services.jobs import job_operator_requeue
from synthorg.enums import MemoryCategory, MemoryLevel
from synthorg.errors import ConflictError, DomainError
from synthorg.jobs.dispatch import (
    RETRY_REASON,
    SLOT_DEFERRED,
    job_enqueue,
    job_llm_slot,
    job_run,
    jobs_run_due,
)
from synthorg.jobs.history import history_writer
from synthorg.jobs.policy import RetryPolicy
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import (
    REASON_MAX,
    LeaseLost,
    job_fail,
    job_finish,
    job_reclaim_expired,
    job_requeue,
)
from synthorg.llm import Completion, CompletionProvider, LLMError
from synthorg.llm.structured import complete_json
from synthorg.text import clip

logger = logging.getLogger(__name__)

MAX_BACKOFF = timedelta(hours=1)
NO_LLM = "no LLM is configured (SYNTHORG_LLM_BASE_URL / SYNTHORG_LLM_MODEL)"
VERBATIM_TAG = "verbatim"
VERBATIM_CONTEXT_CHARS = 300
DEFERRED = SLOT_DEFERRED
GAVE_UP = " (gave up after {attempts} attempts; an operator can re-queue it)"
NOT_EXTRACTING = "extraction is off for this company, or the agent keeps no memories"
NOTHING_PENDING = "nothing left to extract: the range was removed"
ANOTHER_RUN_OPEN = (
    "This conversation has another extraction run queued or running; it covers these messages."
)
#: The job kind's name; found busy, it waits for its turn on the company's LLM slots under it.
EXTRACTION_KIND = "ingestion.extraction"
EXTRACTION_SWEEP = EXTRACTION_KIND
#: a company's due runs per task (oldest first): lost schedules, the rest of capped
#: batches, retries after failures
RUN_BATCH = 100
#: the conversation's one open run (the partial unique index ``ingestion_run_one_open``)
OPEN_RUN = Q(status__in=[ExtractionRun.Status.QUEUED, ExtractionRun.Status.RUNNING]) | Q(
    status=ExtractionRun.Status.FAILED, next_attempt_at__isnull=False
)


@dataclass
class _Claim:
    run: ExtractionRun
    conversation: Conversation


def _extracting(conversation: Conversation, config) -> bool:
    """Whether ``conversation``'s messages are extracted at all (the company's switch, the
    agent's memory level); an agent that stopped keeping memories has nothing due any more."""
    if not config.enabled:
        return False
    if conversation.agent.memory_level == MemoryLevel.NONE:
        Conversation.objects.filter(pk=conversation.pk).update(extraction_due_at=None)
        return False
    return True


def conversation_extract(
    *,
    conversation: Conversation,
    trigger: str | None = None,
    force: bool = False,
    provider: CompletionProvider | None = None,
    now: datetime | None = None,
) -> ExtractionRun | None:
    """Extract the unprocessed messages of ``conversation``; see the module docstring.

    Queues its run if none is open, then claims and runs it (``provider``: the LLM to use,
    default the company's). Returns the run as it left it (``queued`` again when the
    company's LLM slots were busy), or ``None`` when there was nothing to do: nothing
    pending, not due yet (the debounce was pushed by a later flush, a retry's back-off;
    unless ``force``), extraction disabled, or another worker holds the run.
    """
    now = now or timezone.now()
    config = company_config(conversation.agent.company).memory.extraction
    if not _extracting(conversation, config):
        return None
    run = extraction_queue(conversation, trigger=trigger, force=force, now=now, config=config)
    if run is None:
        return None
    if run.status == ExtractionRun.Status.RUNNING:
        if run.claimed_until is None or run.claimed_until > now:
            return None  # another worker is extracting these messages
        job_reclaim_expired(EXTRACTION_JOB, now=now)  # its worker died: claimed again below
    elif run.status == ExtractionRun.Status.FAILED:
        if not force and run.next_attempt_at > now:
            return None  # its back-off has not passed
        if job_requeue(EXTRACTION_JOB, run.pk, now=now, reason=RETRY_REASON, due=True) is None:
            return None
    elif not force and run.next_attempt_at is not None and run.next_attempt_at > now:
        return None  # deferred: it runs at its turn
    job = job_run(EXTRACTION_JOB, run.pk, now=now, batch=provider)
    if job is None or job.__dict__.get("_lease_lost"):
        return None
    return job


def extraction_queue(
    conversation: Conversation, *, trigger=None, force: bool = False, now: datetime, config
) -> ExtractionRun | None:
    """The conversation's open run, or a new ``queued`` run over its pending range when its
    extraction is due (``force``: in any case), due now; ``None`` when nothing is pending or
    due. Under the conversation's row lock (briefly: no LLM call), so a flush or another
    worker sees either no run or this one."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
        if locked is None:  # purged meanwhile
            return None
        run = ExtractionRun.objects.filter(OPEN_RUN, conversation_id=locked.pk).first()
        if run is not None:
            return run
        first = locked.extracted_through_seq + 1
        if first > locked.message_count:
            if locked.extraction_due_at is not None:
                locked.extraction_due_at = None
                locked.save(update_fields=["extraction_due_at"])
            conversation.extraction_due_at = None
            return None
        if not force and locked.extraction_due_at is not None and locked.extraction_due_at > now:
            return None  # the debounce was pushed forward; the re-armed schedule fires later
        last = _batch_end(locked, first, config.max_batch_tokens)
        # due since the conversation became due: the oldest wait runs first
        due = locked.extraction_due_at
        run = ExtractionRun.objects.create(
            company_id=locked.company_id,
            agent_id=locked.agent_id,
            conversation=locked,
            trigger=_trigger(locked, trigger, force=force, config=config),
            status=ExtractionRun.Status.QUEUED,
            first_seq=first,
            last_seq=last,
            message_count=last - first + 1,
            model=config.model or "",
            created_at=now,
            updated_at=now,
            next_attempt_at=due if due is not None and due <= now else now,
        )
        extraction_history(run, now=now)
        # the run carries the timing now (its due time, back-off, deferral)
        locked.extraction_due_at = None
        locked.save(update_fields=["extraction_due_at"])
        conversation.extraction_due_at = None
    return run


def extraction_job_run(job: ExtractionRun, batch) -> bool:
    """The job kind's ``run``: extract one claimed run (``batch``: the LLM provider a caller
    chose, else the company's). ``False`` when the LLM failed (the company's batch stops)."""
    conversation = Conversation.objects.select_related("agent", "company").get(
        pk=job.conversation_id
    )
    config = company_config(conversation.company).memory.extraction
    if not _extracting(conversation, config):
        job_finish(
            EXTRACTION_JOB, job, status=ExtractionRun.Status.CANCELLED, reason=NOT_EXTRACTING
        )
        return True
    first = conversation.extracted_through_seq + 1
    if first > conversation.message_count:
        job_finish(
            EXTRACTION_JOB, job, status=ExtractionRun.Status.CANCELLED, reason=NOTHING_PENDING
        )
        return True
    # The range as it is now (a retry takes the messages flushed since, up to the cap).
    job.first_seq = first
    job.last_seq = _batch_end(conversation, first, config.max_batch_tokens)
    job.message_count = job.last_seq - first + 1
    claim = _Claim(run=job, conversation=conversation)
    provider = batch or completion_provider_for(
        company=conversation.company, agent=conversation.agent
    )
    try:
        if provider is None:
            _extract_verbatim(claim, config=config)
            return True
        with job_llm_slot(EXTRACTION_JOB, job) as slot:
            if not slot:
                logger.info(
                    "extraction of conversation %s deferred: LLM slots busy", conversation.pk
                )
                if config.store_turns:
                    # the turns need no LLM: remembered now; the LLM's facts follow at its
                    # turn (the LLM run skips the turns already stored)
                    _store_turns(job, trigger=ExtractionRun.Trigger.TURNS)
                return True
            return _extract_with_llm(claim, provider, config=config)
    except LeaseLost:
        logger.warning("extraction run %s lost its lease; rolled back", job.pk)
        job.__dict__["_lease_lost"] = True
        return True


def _extract_with_llm(claim: _Claim, provider: CompletionProvider, *, config) -> bool:
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
        _fail(claim, str(exc), config=config)
        _store_turns(run, trigger=ExtractionRun.Trigger.LLM_FAILED)
        return False
    try:
        _apply(claim, facts, completion, messages, config=config)
    except DomainError as exc:  # e.g. the project closed meanwhile
        logger.warning("extraction run %s could not store its facts: %s", run.pk, exc)
        _fail(claim, str(exc), config=config)
    return True


def _due(now: datetime):
    return Conversation.objects.filter(extraction_due_at__lte=now).filter(
        extracted_through_seq__lt=F("message_count")
    )


def extraction_queue_due(
    *, now: datetime | None = None, company_id: int | None = None, limit: int = 1000
) -> int:
    """Queue the runs of due conversations (``company_id``: of one company) whose own task
    was lost, or the rest of a capped batch; nothing runs here. Returns how many runs were
    queued."""
    now = now or timezone.now()
    due = _due(now).select_related("agent", "company")
    if company_id is not None:
        due = due.filter(company_id=company_id)
    queued = 0
    for conversation in due.order_by("extraction_due_at", "pk")[:limit]:
        config = company_config(conversation.company).memory.extraction
        if _extracting(conversation, config) and extraction_queue(
            conversation, now=now, config=config
        ):
            queued += 1
    return queued


def _prepare(now: datetime, company_id: int | None, limit: int | None) -> None:
    """Before the dispatcher looks (the kind's ``prepare``): queue the runs of due
    conversations whose own task was lost, or the rest of a capped batch."""
    extraction_queue_due(now=now, company_id=company_id, limit=limit or 1000)


def _store_turns_while_waiting(company_id: int, now: datetime, limit: int) -> None:
    """Every LLM slot of the company is taken: the turns of its due runs need no LLM and
    are stored at once (``store_turns``); only the facts wait for the runs' turn. Nothing is
    claimed; a turn already stored is not stored again."""
    runs = (
        EXTRACTION_JOB.due_jobs(now)
        .filter(company_id=company_id)
        .select_related("conversation__company")
        .order_by("next_attempt_at", "pk")[:limit]
    )
    for run in runs:
        config = company_config(run.conversation.company).memory.extraction
        if config.enabled and config.store_turns:
            _store_turns(run, trigger=ExtractionRun.Trigger.TURNS)


def conversations_extract_due(*, now: datetime | None = None, limit: int = RUN_BATCH) -> int:
    """Every company's due runs, company by company, in this process (what the kernel's
    per-company tasks do; tests and benchmarks). Returns the number of runs made."""
    return jobs_run_due(EXTRACTION_JOB, now=now, limit=limit).retried


# --- 1. queue ------------------------------------------------------------------------------


def _trigger(conversation: Conversation, trigger, *, force: bool, config) -> str:
    if trigger is not None:
        return trigger
    if force:
        return ExtractionRun.Trigger.MANUAL
    if conversation.pending_tokens >= config.max_pending_tokens:
        return ExtractionRun.Trigger.PENDING_TOKENS
    return ExtractionRun.Trigger.DEBOUNCE


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
        # fenced by the lease: a run whose lease was taken over raises LeaseLost, and all
        # of this is rolled back
        job_finish(EXTRACTION_JOB, run, status=ExtractionRun.Status.SUCCEEDED, now=now)
        _advance(locked, run, config=config, now=now)
        journal_append_extraction(run=run, conversation=locked, facts=rows, now=now)
    memories_trim_to_cap(agent=agent, now=now)
    return run


def _advance(locked: Conversation, run: ExtractionRun, *, config, now: datetime) -> None:
    """Move the conversation past ``run``'s range (the rest of a capped batch is due)."""
    pending = _pending_tokens(locked, after=run.last_seq)
    locked.extracted_through_seq = run.last_seq
    locked.pending_tokens = pending
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
    run's counts and its method, ``verbatim`` (the caller records its outcome)."""
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
    return rows


def _extract_verbatim(claim: _Claim, *, config) -> None:
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
            job_finish(EXTRACTION_JOB, run, status=ExtractionRun.Status.SUCCEEDED, now=now)
            locked.verbatim_through_seq = max(locked.verbatim_through_seq, run.last_seq)
            locked.save(update_fields=["verbatim_through_seq"])
            _advance(locked, run, config=config, now=now)
            journal_append_extraction(run=run, conversation=locked, facts=rows, now=now)
    except DomainError as exc:  # e.g. the project closed meanwhile
        logger.warning("extraction run %s could not store its turns: %s", run.pk, exc)
        _fail(claim, str(exc), config=config)
        return
    memories_trim_to_cap(agent=agent, now=now)


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
                # a record of what was stored, never due: not a job that runs
                status=ExtractionRun.Status.SUCCEEDED,
                first_seq=first,
                last_seq=failed.last_seq,
                message_count=failed.last_seq - first + 1,
                created_at=now,
                updated_at=now,
                completed_at=now,
            )
            turns, requests = _verbatim_requests(run, conversation, first_seq=first)
            # memories first, then the conversation's row lock (the order _apply takes)
            rows = _store_verbatim(run, conversation.agent, turns, requests, now=now)
            locked = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
            if locked is None or locked.verbatim_through_seq >= first:
                raise _LostClaim()  # purged, or another worker stored these turns meanwhile
            run.save()
            extraction_history(run, now=now)
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
    live = Memory.objects.live(now).filter(
        agent=agent, is_shared=False, pk__in=ids, subject=subject
    )
    return set(live.values_list("pk", flat=True))


def _pending_tokens(conversation: Conversation, *, after: int) -> int:
    total = ConversationMessage.objects.filter(conversation=conversation, seq__gt=after).aggregate(
        total=Sum("token_count")
    )["total"]
    return total or 0


def extraction_retry_policy(config) -> RetryPolicy:
    """The kernel's retry policy with the company's base (``retry_backoff_seconds``),
    doubling per failed attempt, at most an hour, given up after the kernel's default number
    of attempts (the turns are stored verbatim meanwhile; an operator can re-queue it)."""
    return dataclasses.replace(
        EXTRACTION_JOB.policy, base=timedelta(seconds=config.retry_backoff_seconds)
    )


def _fail(claim: _Claim, reason: str, *, config) -> None:
    """Record a run that extracted nothing (the kernel's :func:`job_fail`): the range stays
    pending and the run is due again after the company's back-off, or it gave up."""
    kind = dataclasses.replace(EXTRACTION_JOB, policy=extraction_retry_policy(config))
    job_fail(
        kind,
        claim.run,
        status=ExtractionRun.Status.FAILED,
        reason=reason[: REASON_MAX - len(GAVE_UP) - 8],
        gave_up_status=ExtractionRun.Status.GAVE_UP,
        gave_up_suffix=GAVE_UP,
    )


extraction_history = history_writer(ExtractionRunStatusChange, "run")


def _enqueue(pk) -> None:
    job_enqueue(EXTRACTION_JOB, pk)


def extraction_operator_requeue(*, principal, job_id, now: datetime | None = None):
    """The kernel's operator re-queue of a given-up run; 409 ``job_not_requeueable`` when
    its conversation has another open run meanwhile (one open run per conversation)."""
    try:
        with transaction.atomic():
            return job_operator_requeue(
                principal=principal, kind=EXTRACTION_JOB, job_id=job_id, now=now
            )
    except IntegrityError as exc:  # ingestion_run_one_open
        raise ConflictError(ANOTHER_RUN_OPEN, code="job_not_requeueable") from exc


def _describe(run: ExtractionRun) -> str:
    return (
        f"messages {run.first_seq}–{run.last_seq} of conversation "
        f"{run.conversation.external_id} ({run.agent.name})"
    )


EXTRACTION_JOB = JobKind(
    name=EXTRACTION_KIND,
    model=ExtractionRun,
    history=extraction_history,
    run=extraction_job_run,
    batch_size=RUN_BATCH,
    prepare=_prepare,
    while_busy=_store_turns_while_waiting,
    policy=RetryPolicy(max_delay=MAX_BACKOFF),  # the base is the company's (_fail)
    select_related=("agent", "company", "conversation"),
    label="Extraction run",
    # a run whose code raised: on the failures page, not retried in a loop
    crashed_status=ExtractionRun.Status.GAVE_UP,
    failed_statuses=(ExtractionRun.Status.GAVE_UP,),
    describe=_describe,
    target_type="extraction_run",
    requeue=extraction_operator_requeue,
    enqueue=_enqueue,
)
