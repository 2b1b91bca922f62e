"""Deep dream: consolidate an agent's journal into its core summary memory.

For one agent (:func:`agent_dream`; :func:`company_dream` for every persistent-level agent
of a company, run by the per-company schedule as a durable job
(:mod:`memory.ingestion.services.dream_schedule`) and by ``manage.py dream``):

1. Inputs: the agent's current core summary (its live SEMANTIC memory tagged ``core``) and
   its journal days since the day of the last successful dream (that day is read again:
   entries may have been added after the dream), at most ``memory.dream.lookback_days``
   back. Dream entries are left out (the dream must not read its own diary).
2. **Content-hash guard**: the SHA-256 of that journal equal to the last successful dream's,
   with the core still the one that dream wrote ⇒ ``unchanged``, no LLM call. No journal
   in the window ⇒ ``nothing_new``.
3. No LLM ⇒ **extractive** consolidation (``method`` ``extractive``, :func:`extractive_core`):
   the previous core's facts and the facts the journal recorded as learned or already known
   become the new core, verbatim (never the journal's bookkeeping: headings, counts, ids).
   With an LLM (``method`` ``llm``), an LLM error or an answer that is not the JSON contract ⇒
   ``failed``. Every outcome is a :class:`DreamRun` row (the dream diary).
4. The new core is at most ``memory.dream.max_core_tokens`` tokens as the service counts
   them (:func:`core_max_chars`): the extractive core drops its oldest facts to fit, an LLM
   answer that is longer loses its last lines (the one that crosses the limit is clipped at
   a sentence or word boundary, :func:`synthorg.text.clip_lines`) and the diary says so.
5. Success, in one transaction: the new core summary is stored through the write gate
   (``memory_store_batch``: SEMANTIC, tag ``core``, ``supersedes`` the previous core — kept,
   marked superseded, restorable), the run records what changed and why, and a dream entry
   is appended to the journal. Nothing is deleted.
"""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory.core.domain import CORE_TAG, MemoryStoreRequest
from memory.core.llm import completion_provider_for
from memory.core.models.memory import Memory
from memory.core.services.store import memory_store_batch
from memory.ingestion.models import DreamRun, JournalEntry
from memory.ingestion.prompts import (
    InvalidAnswerError,
    dream_messages,
    dream_response_format,
    parse_dream,
)
from memory.ingestion.selectors import render_journal
from memory.ingestion.services.journal import journal_append_dream
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory, MemoryLevel
from synthorg.llm import CompletionProvider, LLMError
from synthorg.llm.slots import company_llm_slot
from synthorg.llm.structured import complete_json
from synthorg.retrieval.tokens import max_chars_for_tokens
from synthorg.text import clip, clip_lines

logger = logging.getLogger(__name__)

NO_LLM = "no LLM is configured (SYNTHORG_LLM_BASE_URL / SYNTHORG_LLM_MODEL)"
NOT_PERSISTENT = "the agent's memory level is {level!r}; only persistent agents dream"
CORE_MAX_CHARS = 20_000
EXTRACTIVE_MAX_FACTS = 40


def current_core(agent: Agent) -> Memory | None:
    return (
        Memory.objects.filter(
            company_id=agent.company_id,
            agent=agent,
            is_shared=False,
            category=MemoryCategory.SEMANTIC.value,
            tags__contains=[CORE_TAG],
            superseded_at__isnull=True,
        )
        .order_by("-created_at", "-id")
        .first()
    )


def agent_dream(
    *,
    agent: Agent,
    trigger: str = "manual",
    provider: CompletionProvider | None = None,
    now: datetime | None = None,
) -> DreamRun:
    now = now or timezone.now()
    config = company_config(agent.company).memory.dream
    run = DreamRun(company_id=agent.company_id, agent=agent, trigger=trigger, created_at=now)
    if agent.memory_level != MemoryLevel.PERSISTENT:
        return _record(
            run, DreamRun.Status.FAILED, error=NOT_PERSISTENT.format(level=agent.memory_level)
        )
    today = now.astimezone(UTC).date()
    start = today - timedelta(days=config.lookback_days - 1)
    last = (
        DreamRun.objects.filter(agent=agent, status=DreamRun.Status.SUCCEEDED)
        .order_by("-created_at", "-id")
        .first()
    )
    if last is not None and last.journal_to is not None and last.journal_to > start:
        start = last.journal_to
    entries = list(
        JournalEntry.objects.filter(
            company_id=agent.company_id,
            agent=agent,
            kind=JournalEntry.Kind.EXTRACTION,
            day__gte=start,
            day__lte=today,
        )
        # an end user's conversations never reach the core or the diary: those outlive the
        # subject's erasure, which deletes the journal entries of their conversations
        .exclude(run__conversation__subject__gt="")
        .order_by("day", "created_at", "id")
    )
    core = current_core(agent)
    run.previous_core_id = core.pk if core else None
    run.journal_from, run.journal_to = start, today
    run.journal_entries = len(entries)
    if not entries:
        return _record(run, DreamRun.Status.NOTHING_NEW)
    by_day: dict = {}
    for entry in entries:
        by_day.setdefault(entry.day, []).append(entry.markdown)
    journal = "\n".join(
        render_journal(agent_name=agent.name, day=day, entries=texts)
        for day, texts in by_day.items()
    )
    core_text = core.content if core else ""
    # The journal's hash; the core is unchanged when it is still the one the last dream
    # wrote (its own output must not make the same journal look new).
    run.input_hash = hashlib.sha256(journal.encode()).hexdigest()
    if (
        last is not None
        and last.input_hash == run.input_hash
        and last.core_memory_id == (core.pk if core else None)
    ):
        return _record(run, DreamRun.Status.UNCHANGED)
    if provider is None:
        provider = completion_provider_for(company=agent.company, agent=agent)
    max_chars = core_max_chars(config.max_core_tokens)
    if provider is None:
        new_core = extractive_core(core_text, journal, max_chars=max_chars)
        run.method = "extractive"
        return _store_core(
            run, agent=agent, core=core, new_core=new_core, diary=EXTRACTIVE_DIARY, now=now
        )
    run.method = "llm"
    prompt = dream_messages(core=core_text, journal=journal, max_tokens=config.max_core_tokens)
    try:
        completion = complete_json(
            provider,
            prompt,
            response_format=dream_response_format(),
            temperature=config.temperature,
        )
        new_core, diary = parse_dream(
            completion.content, truncated=completion.finish_reason == "length"
        )
    except (LLMError, InvalidAnswerError) as exc:
        logger.warning("dream of agent %s failed: %s", agent.pk, exc)
        return _record(run, DreamRun.Status.FAILED, error=str(exc)[:2000])
    run.model = completion.model
    if len(new_core.strip()) > max_chars:
        new_core = clip_lines(new_core, max_chars)
        diary = f"{diary}\n\n{CORE_CUT.format(tokens=config.max_core_tokens)}".strip()
    return _store_core(run, agent=agent, core=core, new_core=new_core, diary=diary, now=now)


def core_max_chars(max_core_tokens: int) -> int:
    """The longest core a dream stores: ``memory.dream.max_core_tokens`` as the service counts
    tokens (:func:`synthorg.retrieval.tokens.estimate_tokens`), at most :data:`CORE_MAX_CHARS`."""
    return min(max_chars_for_tokens(max_core_tokens), CORE_MAX_CHARS)


CORE_CUT = (
    "The answer was longer than memory.dream.max_core_tokens ({tokens} tokens): its last "
    "lines were cut."
)
EXTRACTIVE_DIARY = (
    "Extractive dream (no LLM configured): the facts of the previous core and the facts the "
    "journal says were learned or already known, kept verbatim (newest last)."
)
CORE_HEADING = "What I know (kept from my memories, newest last):"
ITEM_CHARS = 300
_FACT_LINE = re.compile(
    r"^- (?:learned|already knew) \([^)]*\): (?P<text>.*?)(?: — replaces `[^`]*`(?:, `[^`]*`)*)?$"
)


def core_items(core_text: str) -> list[str]:
    """The facts a previous core holds: its ``- `` items (this module's format), else each of
    its non-empty lines (a core an LLM wrote)."""
    lines = [line.strip() for line in core_text.splitlines() if line.strip()]
    if lines and lines[0] == CORE_HEADING:
        return [line[2:].strip() for line in lines[1:] if line.startswith("- ")]
    return lines


def journal_facts(journal: str) -> list[str]:
    """The facts the journal says the agent learned or already knew (not its bookkeeping:
    headings, counts, run ids and the facts not kept are left out)."""
    return [m["text"].strip() for line in journal.splitlines() if (m := _FACT_LINE.match(line))]


def extractive_core(core_text: str, journal: str, *, max_chars: int = CORE_MAX_CHARS) -> str:
    """The no-LLM dream's new core: what the agent knows — the previous core's facts, then
    the facts the journal recorded, each once, newest last, at most
    :data:`EXTRACTIVE_MAX_FACTS` and ``max_chars`` characters (the oldest give way; a single
    fact longer than that is clipped), none cut inside a word. Also what the demo's
    stand-in model answers (:mod:`memory.interfaces.demo_llm`)."""
    items: list[str] = []
    for fact in [*core_items(core_text), *journal_facts(journal)]:
        fact = clip(fact, ITEM_CHARS)
        if fact and fact.lower() not in {i.lower() for i in items}:
            items.append(fact)
    items = items[-EXTRACTIVE_MAX_FACTS:]
    if not items:
        return clip_lines(core_text, max_chars)

    def rendered(items: list[str]) -> str:
        return "\n".join([CORE_HEADING, *(f"- {item}" for item in items)])

    while len(items) > 1 and len(rendered(items)) > max_chars:
        items.pop(0)
    return clip_lines(rendered(items), max_chars)


def _store_core(run: DreamRun, *, agent, core, new_core: str, diary: str, now) -> DreamRun:
    with transaction.atomic():
        [result] = memory_store_batch(
            agent=agent,
            requests=[
                MemoryStoreRequest(
                    content=new_core,
                    category=MemoryCategory.SEMANTIC,
                    tags=(CORE_TAG,),
                    source=f"dream:{run.pk}",
                    supersedes=(core.pk,) if core else (),
                )
            ],
            now=now,
            # The core summary restates facts the agent holds as separate memories; the
            # near-duplicate gate must not fold it into one of them.
            deduplicate=False,
        )
        run.core_memory_id = result.id
        run.diary = diary
        _record(run, DreamRun.Status.SUCCEEDED)
        journal_append_dream(dream=run, now=now)
    return run


def _record(run: DreamRun, status: str, *, error: str = "") -> DreamRun:
    run.status = status
    run.error = error
    run.save()
    if status in (DreamRun.Status.FAILED, DreamRun.Status.SKIPPED_NO_LLM):
        logger.warning("dream of agent %s: %s (%s)", run.agent_id, status, error)
    return run


def dream_now(
    *, company: Company, agent: Agent | None = None, trigger: str = "manual", now=None
) -> list[DreamRun] | None:
    """Dream now for the company's persistent agents, or only ``agent`` (``manage.py
    dream``'s; the schedule's is a durable job, :mod:`memory.ingestion.services.dream_schedule`).
    With an LLM configured it runs while holding one of the company's LLM slots
    (:mod:`synthorg.llm.slots`) for all the dreams; with every slot taken nothing runs and
    ``None`` is returned (the command says so). The extractive dream (no LLM) needs no
    slot."""
    now = now or timezone.now()

    def run() -> list[DreamRun]:
        if agent is not None:
            return [agent_dream(agent=agent, trigger=trigger, now=now)]
        return company_dream(company=company, trigger=trigger, now=now)

    if completion_provider_for(company=company) is None:
        return run()
    with company_llm_slot(company.pk) as slot:
        if not slot:
            return None
        return run()


def company_dream(*, company: Company, trigger: str = "schedule", now=None) -> list[DreamRun]:
    """Dream for every active persistent-level agent of ``company``; one agent's failure
    does not stop the others."""
    runs = []
    agents = Agent.objects.filter(
        company=company, is_active=True, memory_level=MemoryLevel.PERSISTENT.value
    ).select_related("company")
    for agent in agents.order_by("pk"):
        try:
            runs.append(agent_dream(agent=agent, trigger=trigger, now=now))
        except Exception:
            logger.exception("dream of agent %s failed", agent.pk)
    return runs
