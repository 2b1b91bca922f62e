"""The memory injection strategies behind one protocol, chosen by ``memory.retrieval.strategy``.

* ``context``: memories are retrieved for the query and packed into the prompt (the
  pipeline in :mod:`memory.prompting.context`); no tools. An agent that may write is told,
  as under the other strategies, what qualifies as non-inferable (seeds D23: "the system
  prompt instructs agents what qualifies as non-inferable") — and, under
  ``non_inferable_only``, that untagged memories are never injected.
* ``tool_based``: the prompt only announces the tools; the agent calls ``search_memory`` /
  ``recall_memory`` (and ``store_memory`` / ``forget_memory`` when its memory level lets it
  write) on demand. ``search_memory`` is the full hybrid pipeline, with the Search-and-Ask
  loop when ``query_reformulation_enabled``.
* ``self_editing``: the agent's core memory block is always in the prompt (within
  ``memory.self_editing.core_token_budget``) and six tools read and edit core, archival and
  recall memory.

Company core policies are pinned first by every strategy (``include_org``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memory.core.llm import completion_provider_for
from memory.core.retrieval.filtering import NON_INFERABLE_GUIDANCE
from memory.core.retrieval.formatting import build_messages
from memory.core.retrieval.packing import estimate_tokens
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.search import SearchHit, memory_search
from memory.prompting.context import (
    ContextRequest,
    PreparedContext,
    agent_prompt_context,
    rerank_hits,
)
from memory.prompting.llm_checks import (
    LLMQueryReformulator,
    LLMSufficiencyChecker,
    llm_request_deadline,
)
from memory.prompting.search_and_ask import StepFailed, search_and_ask
from memory.prompting.self_editing import core_block
from orgmemory.selectors.policies import CorePolicyBlock, pinned_core_policies
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import (
    CompanyMemoryConfig,
    InjectionStrategy,
    MemoryRetrievalConfig,
)
from synthorg.enums import MemoryLevel
from synthorg.errors import DomainError
from synthorg.tools import registered_tools

TOOL_BASED_INSTRUCTION = (
    "You have long-term memory tools: call search_memory(query, limit) to look up what you "
    "learned before, and recall_memory(id) to read one memory in full. Search before "
    "assuming you do not know something about this organisation or its past work."
)
TOOL_BASED_WRITE_INSTRUCTION = (
    " Call store_memory to remember something worth keeping, and forget_memory (with "
    "confirm: true and a reason) to delete a memory that is wrong. " + NON_INFERABLE_GUIDANCE
)
SELF_EDITING_INSTRUCTION = (
    "You manage your own memory. Core memory (below) is always in your prompt: keep it "
    "short and current with core_memory_read / core_memory_write. Archival memory holds "
    "everything else you know: archival_memory_search / archival_memory_write. Recall memory "
    "is your conversation history: recall_memory_read / recall_memory_write. "
    + NON_INFERABLE_GUIDANCE
)
CONTEXT_WRITE_INSTRUCTION = (
    "When you store a memory, keep only what is worth remembering. " + NON_INFERABLE_GUIDANCE
)
CONTEXT_FILTER_NOTE = (
    " Only memories tagged 'non-inferable' are injected into your prompt here (the company "
    "sets memory.retrieval.non_inferable_only): an untagged memory is found by search only."
)
CORE_MEMORY_HEADER = "## Core memory (yours; keep it current)"

SEARCH_TOOLS = ("search_memory", "recall_memory")
WRITE_TOOLS = ("store_memory", "forget_memory")
SELF_EDITING_TOOLS = (
    "core_memory_read",
    "core_memory_write",
    "archival_memory_search",
    "archival_memory_write",
    "recall_memory_read",
    "recall_memory_write",
)


@dataclass
class ToolSearchResult:
    """``search_memory`` as a tool: hits, and how the Search-and-Ask loop went."""

    hits: list[SearchHit]
    degraded: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    sufficient: bool | None = None
    #: a running re-embedding job's progress (``degraded`` holds ``"reembedding"``)
    reembedding: dict | None = None
    #: with ``query_specific_rerank_enabled``: "llm" (re-ranked now), "cache" (the cached
    #: order) or "" (the fused order kept; ``degraded`` says why); ``None`` when not enabled
    reranked: str | None = None


class MemoryInjectionStrategy(Protocol):
    """How memories reach an agent (the seeds' protocol; synchronous here)."""

    @property
    def strategy_name(self) -> str: ...

    def prepare_messages(self, request: ContextRequest) -> PreparedContext: ...

    def get_tool_definitions(self) -> tuple[dict, ...]: ...


def _definitions(names: Sequence[str]) -> tuple[dict, ...]:
    return tuple(spec.openai_definition() for spec in registered_tools(names))


class _Strategy:
    """What every strategy holds: the agent, its company's memory config, and the company's
    whole parsed config (handed in by the caller that read it, or read once, lazily)."""

    def __init__(
        self, agent: Agent, config: CompanyMemoryConfig, full_config: CompanyConfig | None = None
    ) -> None:
        self.agent = agent
        self.config = config
        self._full_config = full_config

    @functools.cached_property
    def full_config(self) -> CompanyConfig:
        return self._full_config or company_config(self.agent.company)

    def _core_policies(self, include_org: bool) -> CorePolicyBlock | None:
        if not include_org:
            return None
        return pinned_core_policies(company=self.agent.company, config=self.full_config)


class ContextInjectionStrategy(_Strategy):
    strategy_name = InjectionStrategy.CONTEXT.value

    @property
    def can_write(self) -> bool:
        return self.agent.memory_level != MemoryLevel.NONE

    def prepare_messages(self, request: ContextRequest) -> PreparedContext:
        retrieval = self.config.retrieval
        prepared = agent_prompt_context(
            agent=self.agent, request=request, config=retrieval, full_config=self.full_config
        )
        if self.can_write:
            # An instruction, outside the memories' token budget (as under every strategy).
            instruction = CONTEXT_WRITE_INSTRUCTION + (
                CONTEXT_FILTER_NOTE if retrieval.non_inferable_only else ""
            )
            # after the pinned core policies, before the memories (as under tool_based)
            at = 1 if prepared.policy_block is not None else 0
            prepared.messages.insert(at, {"role": "system", "content": instruction})
        return prepared

    def get_tool_definitions(self) -> tuple[dict, ...]:
        return ()


class ToolBasedInjectionStrategy(_Strategy):
    strategy_name = InjectionStrategy.TOOL_BASED.value

    @property
    def can_write(self) -> bool:
        return self.agent.memory_level != MemoryLevel.NONE

    def prepare_messages(self, request: ContextRequest) -> PreparedContext:
        policy_block = self._core_policies(request.include_org)
        pinned = [policy_block.text] if policy_block else []
        instruction = TOOL_BASED_INSTRUCTION + (TOOL_BASED_WRITE_INSTRUCTION * self.can_write)
        messages = build_messages([], pinned=pinned)
        messages.append({"role": "system", "content": instruction})
        used = sum(estimate_tokens(text) for text in pinned)
        return PreparedContext(
            messages, [], [], used, request.token_budget, policy_block=policy_block
        )

    def get_tool_definitions(self) -> tuple[dict, ...]:
        return _definitions(SEARCH_TOOLS + (WRITE_TOOLS if self.can_write else ()))


class SelfEditingMemoryStrategy(_Strategy):
    strategy_name = InjectionStrategy.SELF_EDITING.value

    def prepare_messages(self, request: ContextRequest) -> PreparedContext:
        token_budget = request.token_budget
        policy_block = self._core_policies(request.include_org)
        pinned = [policy_block.text] if policy_block else []
        pinned_tokens = sum(estimate_tokens(text) for text in pinned)
        block = core_block(
            agent=self.agent,
            token_budget=max(0, token_budget - pinned_tokens),
            config=self.config.self_editing,
        )
        messages = build_messages(
            [entry.fenced for entry in block.included],
            role=self.config.retrieval.injection_point.value,
            pinned=pinned,
        )
        messages.append({"role": "system", "content": SELF_EDITING_INSTRUCTION})
        return PreparedContext(
            messages=messages,
            included=block.included,
            dropped=block.dropped,
            tokens_used=pinned_tokens + block.tokens_used,
            token_budget=token_budget,
            policy_block=policy_block,
        )

    def get_tool_definitions(self) -> tuple[dict, ...]:
        return _definitions(SELF_EDITING_TOOLS)


STRATEGIES = {
    InjectionStrategy.CONTEXT: ContextInjectionStrategy,
    InjectionStrategy.TOOL_BASED: ToolBasedInjectionStrategy,
    InjectionStrategy.SELF_EDITING: SelfEditingMemoryStrategy,
}


def strategy_for(
    agent: Agent, config: CompanyMemoryConfig, *, full_config: CompanyConfig | None = None
) -> MemoryInjectionStrategy:
    """The strategy ``config`` (the agent's company's memory config) selects
    (``memory.retrieval.strategy``). ``full_config``: the company's parsed config when the
    caller has read it (``config`` is then its ``memory``); the strategy hands it down."""
    return STRATEGIES[config.retrieval.strategy](agent, config, full_config)


def search_with_reformulation(
    *,
    agent: Agent,
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    provider=None,
    full_config: CompanyConfig | None = None,
):
    """``search_memory`` as a tool: hybrid search, plus Search-and-Ask when configured, then
    the LLM re-ranking when ``query_specific_rerank_enabled`` (:func:`rerank_hits`).

    Without an LLM the loop cannot run: one retrieval answers and ``degraded`` says
    ``reformulation_unavailable`` (and ``rerank_unavailable`` for the re-ranking).
    ``provider`` is for callers that bring their own client. The LLM calls share one budget,
    ``SYNTHORG_LLM["REQUEST_BUDGET"]`` seconds from the start of the request
    (:func:`llm_request_deadline`); past it the results found so far answer and ``degraded``
    says ``llm_budget_exceeded``. ``full_config``: the company's parsed config when the
    caller has read it, handed to every search round.
    """
    deadline = llm_request_deadline()
    needs_llm = query.text is not None and (
        config.query_reformulation_enabled or config.query_specific_rerank_enabled
    )
    if needs_llm and provider is None:
        provider = completion_provider_for(company=agent.company, agent=agent)
    result = _search_and_ask(
        agent=agent, query=query, config=config, provider=provider, deadline=deadline,
        full_config=full_config,
    )  # fmt: skip
    if config.query_specific_rerank_enabled and query.text is not None:
        hits, source, degraded = rerank_hits(
            result.hits, agent=agent, query_text=query.text, config=config, provider=provider,
            deadline=deadline,
        )  # fmt: skip
        result.hits = hits
        result.reranked = source
        result.degraded += [d for d in degraded if d not in result.degraded]
    return result


def _search_and_ask(
    *,
    agent: Agent,
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    provider,
    deadline,
    full_config: CompanyConfig | None,
) -> ToolSearchResult:
    first = memory_search(agent=agent, query=query, config=config, full_config=full_config)
    if not config.query_reformulation_enabled or query.text is None:
        return ToolSearchResult(
            first.hits, list(first.degraded), [query.text or ""], reembedding=first.reembedding
        )
    if provider is None:
        return ToolSearchResult(
            first.hits,
            [*first.degraded, "reformulation_unavailable"],
            [query.text],
            reembedding=first.reembedding,
        )
    degraded = list(first.degraded)
    rounds = iter([first])

    def retrieve(text: str):
        result = next(rounds, None)  # the first round is already done
        if result is None:
            try:
                result = memory_search(
                    agent=agent,
                    query=query.model_copy(update={"text": text}),
                    config=config,
                    full_config=full_config,
                )
            except DomainError as exc:  # a later round failing keeps the earlier results
                raise StepFailed(str(exc)) from exc
        degraded.extend(d for d in result.degraded if d not in degraded)
        return result.hits

    checker = LLMSufficiencyChecker(provider, deadline=deadline)
    reformulator = LLMQueryReformulator(provider, deadline=deadline)
    outcome = search_and_ask(
        query.text,
        retrieve=retrieve,
        is_sufficient=lambda q, hits: checker(q, [hit.memory.content for hit in hits]),
        reformulate=lambda q, tried, hits: reformulator(
            q, tried, [hit.memory.content for hit in hits]
        ),
        key=lambda hit: hit.memory.pk,
        score=lambda hit: hit.combined,
        max_rounds=config.max_reformulation_rounds,
        limit=query.limit,
    )
    return ToolSearchResult(
        outcome.hits,
        degraded + outcome.degraded,
        outcome.queries,
        outcome.sufficient,
        reembedding=first.reembedding,
    )
