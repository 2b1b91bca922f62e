"""Fusing the two legs into one ranking, per the company's ``memory.retrieval`` config.

``rrf``: the two ranked lists fused by Reciprocal Rank Fusion (``rrf_k``), min-max
normalised (with the time-window leg as a third list when the legs ran one,
``time_window_legs``), re-scored by the speaker feature (``speaker_boost``,
:mod:`memory.core.retrieval.speakers`), toward the newest for "latest" questions
(``latest_boost``) and across sessions (``session_spread``,
:mod:`memory.core.retrieval.temporal`), ``min_relevance`` applied to the fused score.
``linear``: relevance is the cosine similarity of every candidate either leg produced
(``default_relevance`` for a row without a comparable vector), plus ``personal_boost`` for
private rows, combined with exponential recency. With the dense leg degraded, linear
relevance is the BM25 score relative to the best one.
"""

from __future__ import annotations

from datetime import datetime

from memory.core.retrieval.ranking import Candidate, rank_linear
from memory.core.retrieval.speakers import boost_speakers
from memory.core.retrieval.temporal import asks_latest, prefer_latest, spread_sessions
from memory.core.selectors.search.legs import DEGRADED_DENSE, Legs
from synthorg.company_config.memory import FusionStrategy, MemoryRetrievalConfig
from synthorg.retrieval.fusion import rrf_fuse


def fuse(
    ran: Legs,
    *,
    config: MemoryRetrievalConfig,
    min_relevance: float,
    limit: int,
    now: datetime,
    text: str = "",
) -> list[tuple]:
    """``(id, relevance, recency, combined)`` best first, at most ``limit``. ``text``: the
    query, for the speaker feature (rrf with ``speaker_boost``; the legs fetched tags)."""
    similarity = ran.similarity
    if config.fusion_strategy is FusionStrategy.RRF:
        lists = [[mid for mid, _ in ran.dense], [mid for mid, _ in ran.sparse]]
        if ran.window:
            lists.append([mid for mid, _ in ran.window])
        fused = rrf_fuse(lists, k=config.rrf_k)
        if config.speaker_boost and ran.tags:
            fused = boost_speakers(fused, ran.tags, query=text, weight=config.speaker_boost)
        created = {mid: meta[0] for mid, meta in ran.meta.items()}
        if config.latest_boost and created and asks_latest(text):
            fused = prefer_latest(fused, created, weight=config.latest_boost)
        if config.session_spread and created:
            fused = spread_sessions(fused, created, weight=config.session_spread)
        top = [(mid, score) for mid, score in fused if score >= min_relevance][:limit]
        return [(mid, _clamp(similarity.get(mid, 0.0)), 0.0, score) for mid, score in top]

    candidate_ids = list(dict.fromkeys([mid for mid, _ in ran.dense + ran.sparse]))
    if DEGRADED_DENSE in ran.degraded and ran.sparse:
        best = ran.sparse[0][1] or 1.0
        relevance = {mid: score / best for mid, score in ran.sparse}
    else:
        relevance = {mid: _clamp(sim) for mid, sim in similarity.items()}
    meta = ran.meta
    ranked = rank_linear(
        [
            Candidate(
                key=mid,
                relevance=relevance.get(mid),
                created_at=meta[mid][0],
                is_shared=meta[mid][1],
            )
            for mid in candidate_ids
            if mid in meta
        ],
        now=now,
        relevance_weight=config.relevance_weight,
        recency_weight=config.recency_weight,
        decay_rate=config.recency_decay_rate,
        personal_boost=config.personal_boost,
        default_relevance=config.default_relevance,
        min_relevance=min_relevance,
        max_results=limit,
    )
    return [(s.key, s.relevance, s.recency, s.combined) for s in ranked]


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))
