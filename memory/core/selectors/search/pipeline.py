"""The search entry points: scope → legs → fusion → hydrated hits.

``memory_search`` looks at the agent's live private memories and, when asked, the
company's live shared knowledge; ``shared_search`` at the company's shared knowledge only.
A query without text lists memories newest first (metadata filters only).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from memory.core.retrieval.query import MAX_LIMIT, MemoryQuery
from memory.core.retrieval.ranking import recency_score
from memory.core.retrieval.temporal import asks_latest, time_window
from memory.core.selectors.memories import shared_knowledge_enabled, shared_knowledge_require
from memory.core.selectors.reembed import DEGRADED_REEMBEDDING
from memory.core.selectors.search.fuse import fuse
from memory.core.selectors.search.hydrate import hydrate
from memory.core.selectors.search.legs import run_legs
from memory.core.selectors.search.results import SearchHit, SearchResult
from memory.core.selectors.search.scope import (
    Part,
    private_part,
    scope_filters,
    shared_part,
    union_sql,
)
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig
from synthorg.company_config.memory import FusionStrategy, MemoryRetrievalConfig
from synthorg.db.replicas import read_connection
from synthorg.embedding import Embedder

#: Each leg fetches this many candidates at least (fusion needs depth beyond ``limit``).
MIN_LEG_DEPTH = 50
LEG_DEPTH_FACTOR = 3

#: The legs a search runs; benchmarks and diagnostics may run one alone.
LEGS = ("dense", "sparse")
LEG_ONLY_UNKNOWN = "legs must be a non-empty subset of ('dense', 'sparse')."


def memory_search(
    *,
    agent: Agent,
    query: MemoryQuery,
    include_shared: bool | None = None,
    config: MemoryRetrievalConfig | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    leg_depth: int | None = None,
    legs: Sequence[str] = LEGS,
    full_config: CompanyConfig | None = None,
    anchor_time: datetime | None = None,
) -> SearchResult:
    """The agent's live private memories (and the company's shared knowledge) for ``query``.

    ``full_config``: the company's parsed config when the caller has read it (a request
    reads it once and hands it down; read here otherwise); ``config``: its retrieval
    section (or another one, e.g. a benchmark's). ``anchor_time``: the date the query's
    time words ("last week", "yesterday") are relative to (default ``now``)."""
    company = agent.company
    full_config = full_config or company_config(company)
    config = config or full_config.memory.retrieval
    if include_shared is None:
        include_shared = config.include_shared
    include_shared = include_shared and shared_knowledge_enabled(company, full_config)
    parts = [private_part(agent.company_id, agent.pk)]
    if include_shared:
        parts.append(shared_part(agent.company_id))
    return _search(
        company=company,
        parts=parts,
        query=query,
        config=config,
        embedder=embedder,
        now=now,
        leg_depth=leg_depth,
        legs=legs,
        adapter_config=full_config,
        anchor_time=anchor_time,
    )


def shared_search(
    *,
    company: Company,
    query: MemoryQuery,
    exclude_agent: Agent | None = None,
    config: MemoryRetrievalConfig | None = None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    leg_depth: int | None = None,
    legs: Sequence[str] = LEGS,
    full_config: CompanyConfig | None = None,
    anchor_time: datetime | None = None,
) -> SearchResult:
    """The company's live shared knowledge for ``query`` (optionally not ``exclude_agent``'s);
    403 ``shared_knowledge_disabled`` while the company has it off. ``full_config`` as for
    :func:`memory_search`."""
    full_config = full_config or company_config(company)
    shared_knowledge_require(company, full_config)
    config = config or full_config.memory.retrieval
    part = shared_part(
        company.pk, exclude_agent_id=exclude_agent.pk if exclude_agent is not None else None
    )
    return _search(
        company=company,
        parts=[part],
        query=query,
        config=config,
        embedder=embedder,
        now=now,
        leg_depth=leg_depth,
        legs=legs,
        adapter_config=full_config,
        anchor_time=anchor_time,
    )


def _search(
    *,
    company: Company,
    parts: Sequence[Part],
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    embedder: Embedder | None,
    now: datetime | None,
    leg_depth: int | None,
    legs: Sequence[str] = LEGS,
    adapter_config: CompanyConfig | None = None,
    anchor_time: datetime | None = None,
) -> SearchResult:
    if not legs or not set(legs) <= set(LEGS):
        raise ValueError(LEG_ONLY_UNKNOWN)
    now = now or timezone.now()
    filters = scope_filters(query, now)
    if query.text is None:
        return _listing(parts=parts, filters=filters, query=query, config=config, now=now)

    depth = leg_depth or min(MAX_LIMIT, max(MIN_LEG_DEPTH, LEG_DEPTH_FACTOR * query.limit))
    rrf = config.fusion_strategy is FusionStrategy.RRF
    window = None
    if rrf and config.time_window_legs and "dense" in legs:
        anchored = time_window(query.text, anchor_time or now)
        if anchored is not None and anchored.narrow:
            window = (anchored.start, anchored.end)
    dated = rrf and (
        config.session_spread > 0 or (config.latest_boost > 0 and asks_latest(query.text))
    )
    ran = run_legs(
        company=company, parts=parts, filters=filters, text=query.text, embedder=embedder,
        depth=depth, use_dense="dense" in legs, use_sparse="sparse" in legs,
        with_meta=not rrf or dated, adapter_config=adapter_config,
        with_tags=rrf and config.speaker_boost > 0, window=window,
    )  # fmt: skip
    min_relevance = config.min_relevance if query.min_relevance is None else query.min_relevance
    clock = time.perf_counter()
    scored = fuse(
        ran, config=config, min_relevance=min_relevance, limit=query.limit, now=now,
        text=query.text,
    )  # fmt: skip
    ran.timings["fuse_ms"] = (time.perf_counter() - clock) * 1000

    dense_score, sparse_score = dict(ran.dense), dict(ran.sparse)
    dense_rank = {mid: rank for rank, (mid, _) in enumerate(ran.dense, start=1)}
    sparse_rank = {mid: rank for rank, (mid, _) in enumerate(ran.sparse, start=1)}
    clock = time.perf_counter()
    memories = hydrate([row[0] for row in scored])
    ran.timings["hydrate_ms"] = (time.perf_counter() - clock) * 1000
    hits = [
        SearchHit(
            memory=memories[mid],
            relevance=relevance_value,
            recency=recency_value,
            combined=combined,
            dense_rank=dense_rank.get(mid),
            sparse_rank=sparse_rank.get(mid),
            is_shared=memories[mid].is_shared,
            dense_score=dense_score.get(mid),
            sparse_score=sparse_score.get(mid),
        )
        for mid, relevance_value, recency_value, combined in scored
        if mid in memories
    ]
    degraded, reembedding = ran.degraded, ran.reembedding
    if reembedding is not None:
        # Rows not yet re-embedded have no vector of the query's embedder: only BM25 sees them.
        degraded = [*degraded, DEGRADED_REEMBEDDING]
    return SearchResult(
        hits=hits,
        degraded=degraded,
        dense_paths=ran.dense_paths,
        timings=ran.timings,
        reembedding=reembedding,
        adapter=ran.adapter,
    )


def _listing(
    *,
    parts: Sequence[Part],
    filters: Part,
    query: MemoryQuery,
    config: MemoryRetrievalConfig,
    now: datetime,
) -> SearchResult:
    scope, scope_params = union_sql(parts)
    with read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT m.id FROM memory_memory m WHERE ({scope}) AND {filters.sql} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %s",
            [*scope_params, *filters.params, query.limit],
        )
        ids = [row[0] for row in cursor.fetchall()]
    memories = hydrate(ids)
    hits = []
    for mid in ids:
        memory = memories[mid]
        relevance = config.default_relevance
        if not memory.is_shared and config.fusion_strategy is FusionStrategy.LINEAR:
            relevance = min(1.0, relevance + config.personal_boost)
        recency = recency_score(memory.created_at, now, config.recency_decay_rate)
        combined = config.relevance_weight * relevance + config.recency_weight * recency
        hits.append(
            SearchHit(
                memory=memory,
                relevance=relevance,
                recency=recency,
                combined=min(1.0, max(0.0, combined)),
                dense_rank=None,
                sparse_rank=None,
                is_shared=memory.is_shared,
            )
        )
    return SearchResult(hits=hits)
