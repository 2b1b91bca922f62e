"""Token-budgeted memory context for a prompt (the seeds' ``prepare_messages``).

Pipeline: hybrid search (``memory_search`` with the company's retrieval config) → the
non-inferable filter when ``non_inferable_only`` (fails closed: nothing is injected if it
raises) → MMR when ``diversity_penalty_enabled`` (after the filter, so excluded memories do
not act as anchors; the search over-fetches ``candidate_pool_multiplier``×) → truncate to
``max_memories`` → greedy packing within the token budget (an entry that does not fit is
skipped and packing continues) → chat messages, each entry fenced as untrusted content with
the directive prepended only when at least one entry fits.

``pinned`` texts (e.g. the org's core policies) are always included and never dropped: their
tokens are taken off the budget before the ranked entries are packed (so they count against
it, but are never the thing that gets dropped). ``extra_entries`` (e.g. the org's extended
facts) are ranked together with the memories by score and fenced the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone

from memory.core.domain import parse_request
from memory.core.llm import completion_provider_for
from memory.core.models.memory import Memory
from memory.core.retrieval.diversity import mmr_rerank
from memory.core.retrieval.filtering import (
    TagBasedMemoryFilter,
    apply_filter,
    filter_emptied_warning,
)
from memory.core.retrieval.formatting import build_messages, format_entry
from memory.core.retrieval.packing import estimate_tokens, pack_greedy_with_fallback
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import memory_search
from memory.procedural.advice import Advice, advice_from_text, contradiction
from memory.procedural.contradictions import (
    LESSON,
    ORG_SKILL,
    PRECEDENCE,
    lesson_advice,
    pool_skill_advice,
    skill_advice_of,
)
from memory.procedural.rendering import render_discovery, render_full
from memory.procedural.selectors import attach_lessons, lesson_of
from memory.procedural.skills import org_skills
from memory.prompting.hierarchical import hierarchical_search
from memory.prompting.llm_checks import llm_request_deadline
from memory.prompting.rerank import rerank
from orgmemory.models import OrgFact
from orgmemory.selectors import org_prompt_context
from orgmemory.selectors.policies import CorePolicyBlock
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import MemoryRetrievalConfig
from synthorg.enums import MemoryCategory, OrgFactCategory
from synthorg.errors import InvalidInputError

QUERY_TEXT_BLANK = "query_text must not be blank."
TOKEN_BUDGET_NEGATIVE = "token_budget must be zero or a positive integer."
DEGRADED_FILTER = "filter"


@dataclass(frozen=True)
class ContextEntry:
    """One ranked item that may go into the prompt (a memory or an extra entry)."""

    key: str
    content: str
    score: float
    kind: str = "memory"  # "memory" or the caller's kind for extra entries ("org_fact", ...)
    label: str = ""  # trusted metadata shown in the fence's opening tag
    tags: tuple[str, ...] = ()
    memory: Memory | None = field(default=None, compare=False, repr=False)
    # A shorter form used when this one does not fit (a lesson's discovery tier alone).
    fallback: ContextEntry | None = field(default=None, compare=False, repr=False)
    # For procedural lessons: "all" (three tiers) or "discovery"; "" otherwise.
    tiers: str = ""
    # Why a dropped entry was left out: "budget", or the contradiction that excluded it.
    reason: str = field(default="", compare=False)

    @property
    def fenced(self) -> str:
        return format_entry(self.content, label=self.label)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.fenced)


@dataclass
class PreparedContext:
    messages: list[dict]
    included: list[ContextEntry]
    dropped: list[ContextEntry]
    tokens_used: int
    token_budget: int
    degraded: list[str] = field(default_factory=list)
    #: the search's re-embedding progress while a job runs (see ``SearchResult``)
    reembedding: dict | None = None
    #: how the memories were retrieved when the company configures more than a flat search:
    #: the hierarchical supervisor's trace and/or ``rerank`` ("llm" / "cache" / "")
    retrieval: dict | None = None
    #: advisory ``{code, message}`` entries: e.g. the non-inferable filter left no memory
    warnings: list[dict[str, str]] = field(default_factory=list)
    #: the core policy block pinned first, with its revision (``None``: none was pinned)
    policy_block: CorePolicyBlock | None = None


def check_context_input(query_text: str, token_budget: int) -> None:
    """What every context request requires of its arguments."""
    if not isinstance(query_text, str) or not query_text.strip():
        raise InvalidInputError(QUERY_TEXT_BLANK, code="query_text_blank")
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
        raise InvalidInputError(TOKEN_BUDGET_NEGATIVE, code="token_budget_invalid")


@dataclass(frozen=True)
class ContextRequest:
    """One request for prompt context: validated once where it enters (:meth:`build`) and
    handed down unchanged to the strategy, the org context and the search."""

    #: the search's text, categories and namespaces (its ``limit`` is the config's pool)
    query: MemoryQuery
    token_budget: int
    include_org: bool = True

    @classmethod
    def build(
        cls,
        *,
        query_text: str,
        token_budget: int,
        categories: Sequence[MemoryCategory | str] = (),
        namespaces: Sequence[str] = (),
        include_org: bool = True,
        subject: str | None = None,
        task_id: int | None = None,
    ) -> ContextRequest:
        check_context_input(query_text, token_budget)
        fields: dict = {
            "text": query_text,
            "categories": tuple(categories),
            "namespaces": tuple(namespaces),
            "task_id": task_id,
        }
        if subject is not None:
            fields["subject"] = subject
        query = parse_request(MemoryQuery, fields)
        return cls(query=query, token_budget=token_budget, include_org=include_org)


def memory_context(
    *,
    agent: Agent,
    request: ContextRequest,
    config: MemoryRetrievalConfig,
    pinned: Sequence[str] = (),
    extra_entries: Sequence[ContextEntry] = (),
    now: datetime | None = None,
    embedder=None,
    provider=None,
    full_config: CompanyConfig | None = None,
) -> PreparedContext:
    """The agent's memories packed for a prompt (the pipeline above). ``config``: the
    retrieval section to apply; ``full_config``: the company's parsed config when the caller
    has read it (handed to the search, which reads it otherwise)."""
    now = now or timezone.now()
    token_budget = request.token_budget
    pinned = [text for text in pinned if text and text.strip()]
    pinned_tokens = sum(estimate_tokens(text) for text in pinned)

    pool = config.max_memories
    if config.diversity_penalty_enabled:
        pool *= config.candidate_pool_multiplier
    query = request.query.model_copy(update={"limit": pool})  # validated by the request
    hits, degraded, reembedding, retrieval = retrieve_ranked(
        agent=agent, query=query, config=config, now=now, embedder=embedder, provider=provider,
        full_config=full_config,
    )  # fmt: skip
    attach_lessons([hit.memory for hit in hits])
    entries = [_memory_entry(hit) for hit in hits]

    warnings: list[dict[str, str]] = []
    if config.non_inferable_only:
        matched = len(entries)
        entries, failed = apply_filter(TagBasedMemoryFilter(), entries, lambda e: e.tags)
        if failed:
            degraded.append(DEGRADED_FILTER)
        elif matched and not entries:
            warnings.append(filter_emptied_warning(matched))

    ranked = sorted([*entries, *extra_entries], key=lambda e: -e.score)  # stable
    if config.diversity_penalty_enabled:
        ranked = mmr_rerank(
            ranked,
            score=lambda e: e.score,
            text=lambda e: e.content,
            diversity_lambda=config.diversity_lambda,
        )
    candidates: list[ContextEntry] = []
    memories_taken = 0
    for entry in ranked:  # at most max_memories memories; extra entries all compete
        if entry.kind == "memory":
            if memories_taken >= config.max_memories:
                continue
            memories_taken += 1
        candidates.append(entry)

    candidates, contradicted = drop_contradictions(candidates, pinned=pinned)
    included, dropped, used = pack_greedy_with_fallback(
        candidates,
        cost=lambda e: e.tokens,
        budget=max(0, token_budget - pinned_tokens),
        fallback=lambda e: e.fallback,
    )
    dropped = [replace(e, reason=BUDGET) for e in dropped] + contradicted
    messages = build_messages(
        [entry.fenced for entry in included],
        role=config.injection_point.value,
        pinned=pinned,
    )
    return PreparedContext(
        messages=messages,
        included=included,
        dropped=dropped,
        tokens_used=used + pinned_tokens,
        token_budget=token_budget,
        degraded=degraded,
        reembedding=reembedding,
        retrieval=retrieval,
        warnings=warnings,
    )


BUDGET = "budget"


def _entry_advice(entries: Sequence[ContextEntry]) -> dict[str, tuple[str, Advice]]:
    """(kind, advice) of each entry that advises: a lesson, an org skill (a ``procedure``
    fact, or an org-pool memory: read from the org skill store)."""
    found: dict[str, tuple[str, Advice]] = {}
    lessons = {}
    for entry in entries:
        lesson = lesson_of(entry.memory) if entry.memory is not None else None
        if lesson is not None:
            lessons[str(lesson.memory_id)] = (entry.key, lesson)
    pool = {}
    if lessons:
        company_id = next(iter(lessons.values()))[1].company_id
        pool = pool_skill_advice(org_skills(company=company_id).filter(memory_id__in=list(lessons)))
    for memory_id, (key, lesson) in lessons.items():
        if memory_id in pool:
            found[key] = (ORG_SKILL, pool[memory_id])
        else:
            found[key] = (LESSON, lesson_advice(lesson))
    facts = {
        e.key.removeprefix("fact:"): e.key
        for e in entries
        if e.kind == "org_fact" and e.label == f"org {OrgFactCategory.PROCEDURE.value}"
    }
    if facts:
        rows = list(OrgFact.objects.filter(fact_id__in=list(facts)))
        for fact_id, advice in skill_advice_of(rows).items():
            found[facts[fact_id]] = (ORG_SKILL, advice)
    return found


def drop_contradictions(
    candidates: Sequence[ContextEntry],
    *,
    pinned: Sequence[str] = (),
    advice: dict[str, tuple[str, Advice]] | None = None,
) -> tuple[list[ContextEntry], list[ContextEntry]]:
    """Two entries that contradict never both reach the agent
    (:mod:`memory.procedural.contradictions`): a core policy (pinned) wins over any entry,
    an org skill over a lesson, and otherwise the higher-ranked entry. Returns the kept
    candidates (in order) and the left-out ones, each with its ``reason``. ``advice``: each
    advising entry's (kind, advice) by key (read from the database when not given)."""
    advice = _entry_advice(candidates) if advice is None else advice
    if not advice:
        return list(candidates), []
    policies = [advice_from_text(text) for text in pinned]
    kept: list[ContextEntry] = []
    left_out: list[ContextEntry] = []
    for entry in candidates:
        if entry.key not in advice:
            kept.append(entry)
            continue
        kind, mine = advice[entry.key]
        clash = next(filter(None, (contradiction(mine, p) for p in policies)), None)
        if clash is not None:
            left_out.append(replace(entry, reason=f"contradicts a core policy: {clash.reason()}"))
            continue
        for other in list(kept):
            if other.key not in advice:
                continue
            other_kind, theirs = advice[other.key]
            clash = contradiction(mine, theirs)
            if clash is None:
                continue
            if PRECEDENCE[kind] < PRECEDENCE[other_kind]:  # this one outranks the kept one
                kept.remove(other)
                left_out.append(
                    replace(other, reason=f"contradicts {_named(kind)}: {clash.reason()}")
                )
                continue
            left_out.append(
                replace(entry, reason=f"contradicts {_named(other_kind)}: {clash.reason()}")
            )
            break
        else:
            kept.append(entry)
    return kept, left_out


def _named(kind: str) -> str:
    return {ORG_SKILL: "an approved org skill", LESSON: "a lesson ranked higher"}.get(kind, kind)


def retrieve_ranked(
    *,
    agent: Agent,
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    now: datetime | None = None,
    embedder=None,
    provider=None,
    full_config: CompanyConfig | None = None,
) -> tuple[list, list[str], dict | None, dict | None]:
    """The ranked hits of the context strategy's retrieval: ``retriever`` flat (one hybrid
    search) or hierarchical (:mod:`memory.prompting.hierarchical`), then the LLM re-ranking
    when ``query_specific_rerank_enabled`` (:mod:`memory.prompting.rerank`). Returns hits,
    degraded, re-embedding progress and the retrieval trace (``None`` for a plain flat
    search). The LLM steps share one request budget; the client is built only when a step
    needs one."""
    hierarchical = config.retriever == "hierarchical"
    needs_llm = config.query_specific_rerank_enabled or hierarchical
    if needs_llm and provider is None:
        provider = completion_provider_for(company=agent.company, agent=agent)
    deadline = llm_request_deadline() if needs_llm else None
    if hierarchical:
        found = hierarchical_search(
            agent=agent, query=query, config=config, provider=provider, deadline=deadline,
            now=now, embedder=embedder, full_config=full_config,
        )  # fmt: skip
        hits, degraded, reembedding = found.hits, list(found.degraded), found.reembedding
        retrieval: dict | None = dict(found.trace)
    else:
        result = memory_search(
            agent=agent, query=query, config=config, embedder=embedder, now=now,
            full_config=full_config,
        )  # fmt: skip
        hits, degraded, reembedding = result.hits, list(result.degraded), result.reembedding
        retrieval = None
    if config.query_specific_rerank_enabled and query.text:
        hits, source, rerank_degraded = rerank_hits(
            hits, agent=agent, query_text=query.text, config=config, provider=provider,
            deadline=deadline,
        )  # fmt: skip
        degraded += [d for d in rerank_degraded if d not in degraded]
        retrieval = {"retriever": config.retriever, **(retrieval or {}), "rerank": source}
    return hits, degraded, reembedding, retrieval


def rerank_hits(hits, *, agent, query_text, config, provider, deadline):
    """``hits`` re-ranked for ``query_text`` by the LLM (keeping the fused score values, so
    they compete with org facts on the same scale): ``(hits, source, degraded)``."""
    outcome = rerank(
        hits,
        company_id=agent.company_id,
        query=query_text,
        key=lambda hit: hit.memory.pk,
        text=lambda hit: hit.memory.content,
        provider=provider,
        ttl_seconds=config.rerank_cache_ttl_seconds,
        deadline=deadline,
    )
    scores = sorted((hit.combined for hit in hits), reverse=True)
    ranked = [
        replace(hit, combined=score) for hit, score in zip(outcome.items, scores, strict=True)
    ]
    return ranked, outcome.source, outcome.degraded


def agent_prompt_context(
    *,
    agent: Agent,
    request: ContextRequest,
    config: MemoryRetrievalConfig,
    now: datetime | None = None,
    embedder=None,
    provider=None,
    full_config: CompanyConfig | None = None,
) -> PreparedContext:
    """The whole context an agent splices into its prompt: org knowledge + its memories.

    The company's core policies (config first, then human-written ``core_policy`` facts) are
    pinned: always present, first, never dropped for budget. The org's extended facts most
    relevant to ``query_text`` compete with the agent's memories for the rest of the budget
    and are fenced the same way (they are written by agents and humans: untrusted text).

    ``full_config``: the company's parsed config, read once by the caller and handed to the
    org context and the search (read once here when not given).
    """
    if full_config is None:
        full_config = company_config(agent.company)
    pinned: list[str] = []
    extra: list[ContextEntry] = []
    policy_block = None
    if request.include_org:
        org = org_prompt_context(
            company=agent.company, context=request.query.text, config=full_config
        )
        policy_block = org.core_block
        pinned = [policy_block.text] if policy_block else []
        extra = [
            ContextEntry(
                key=f"fact:{fact.fact_id}",
                content=fact.content,
                score=fact.score,
                kind="org_fact",
                label=f"org {fact.category}",
            )
            for fact in org.facts
        ]
    prepared = memory_context(
        agent=agent,
        request=request,
        config=config,
        pinned=pinned,
        extra_entries=extra,
        now=now,
        embedder=embedder,
        provider=provider,
        full_config=full_config,
    )
    prepared.policy_block = policy_block
    return prepared


def _memory_entry(hit) -> ContextEntry:
    memory = hit.memory
    label = f"{memory.category}, {memory.created_at:%Y-%m-%d}"
    if hit.is_shared:
        label += ", shared"
    entry = ContextEntry(
        key=str(memory.pk),
        content=memory.content,
        score=hit.combined,
        kind="memory",
        label=label,
        tags=tuple(memory.tags),
        memory=memory,
    )
    lesson = lesson_of(memory)
    if lesson is None:
        return entry
    # Procedural lessons: all three tiers when they fit, else the discovery tier alone.
    discovery = replace(entry, content=render_discovery(lesson), tiers="discovery")
    return replace(entry, content=render_full(lesson), tiers="all", fallback=discovery)
